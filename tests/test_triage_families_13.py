"""General triage families added in the 13th corpus round (issue 12), each on real excerpts from public
threads (``tests/fixtures/triage/real/``, sources.json) and against the lines of the same family that
must not fire:

- after a traceback's frames, Python prints the exception at column 0 whatever its type is named
  (pyarrow's ArrowInvalid, triton's OutOfResources): the traceback ends there and the type is read;
- a safetensors file that cannot be parsed (SafetensorError) is a checkpoint failure;
- a .parquet file that is not parquet (Arrow's "magic bytes not found") is missing data;
- /dev/shm exhausted (DataLoader workers out of shared memory) is no_space, not shutdown noise;
- any error of OmegaConf's own module is a config error (its ValidationError, not pydantic's);
- CUDA error 804/802 at device count (compat library on unsupported HW, fabric manager down) is setup.
"""

from __future__ import annotations

from pathlib import Path

from tests.triage_helpers import primary, tri, tri_text

FRAMES = 'Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n    main()\n'


def test_exception_named_without_error_suffix_ends_the_traceback(tmp_path: Path) -> None:
    res = tri_text(
        tmp_path, FRAMES + "triton.runtime.errors.OutOfResources: out of resource: shared memory\n"
    )
    assert primary(res) == ("Fail", "unknown_error", "traceback:triton.runtime.errors.OutOfResources")
    assert "OutOfResources" in res["primary"]["evidence"]
    # a bare type with no message, as `raise Interrupted` prints it
    assert primary(tri_text(tmp_path, FRAMES + "Interrupted\n"))[2] == "traceback:Interrupted"


def test_after_frames_only_a_camelcase_name_is_an_exception(tmp_path: Path) -> None:
    # log levels in capitals and sentences are not exception lines: the traceback stays unterminated
    for line in ("INFO: Started server process", "WARNING: something", "Loading checkpoint shards: 100%"):
        assert primary(tri_text(tmp_path, FRAMES + line + "\n"))[2] == "traceback:unterminated", line
    # and outside a traceback nothing changes: a CamelCase word and a colon is not an exception
    assert primary(tri_text(tmp_path, "Epoch: 3\nStatus: ok\n"))[1] is None


def test_safetensors_unreadable_is_a_checkpoint_failure(tmp_path: Path) -> None:
    for name in ("safetensors_header_too_large_safe_open", "safetensors_header_too_large_from_pretrained"):
        assert primary(tri(name)) == ("Fail", "checkpoint_failure", "exc_safetensors_unreadable"), name
    # the type decides, not the word: a message that only names a .safetensors path is not this rule
    text = FRAMES + "ValueError: expected model.safetensors to hold 3 shards\n"
    assert primary(tri_text(tmp_path, text))[2] != "exc_safetensors_unreadable"


def test_parquet_that_is_not_parquet_is_missing_data(tmp_path: Path) -> None:
    for name in ("parquet_not_parquet_lfs_pointer", "parquet_not_parquet_push_to_hub_reload"):
        assert primary(tri(name)) == ("Blocked", "data_missing", "parquet_file_not_parquet"), name
    assert primary(tri_text(tmp_path, "reading train.parquet (12 MB), magic bytes ok\n"))[1] is None


def test_shared_memory_exhausted_is_no_space(tmp_path: Path) -> None:
    for name in (
        "shm_dataloader_bus_error",
        "shm_dataloader_bus_error_wrapped",
        "shm_unexpected_bus_error_worker",
    ):
        assert primary(tri(name)) == ("Blocked", "no_space", "shm_exhausted"), name
    # a DataLoader worker that exited at shutdown, with no word of shared memory, stays noise
    res = tri_text(tmp_path, "DataLoader worker (pid 4242) exited unexpectedly\n")
    assert primary(res)[1] is None and {f["verdict"] for f in res["findings"]} == {"Noise"}


def test_omegaconf_errors_are_config_errors(tmp_path: Path) -> None:
    for name in ("omegaconf_validation_listconfig", "omegaconf_validation_integer"):
        assert primary(tri(name)) == ("Blocked", "config_error", "exc_module_omegaconf"), name
    # pydantic's ValidationError (vLLM's engine arguments, a model's own config) is not OmegaConf's
    text = FRAMES + "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
    assert primary(tri_text(tmp_path, text))[2] != "exc_module_omegaconf"


def test_cuda_init_error_804_is_environment_setup(tmp_path: Path) -> None:
    for name in ("cuda_init_error_804_driver", "cuda_init_error_804_vllm_engine"):
        assert primary(tri(name)) == ("Blocked", "missing_dependency", "gpu_build_or_driver_mismatch"), name
    # another cudaGetDeviceCount error number is not this family
    text = FRAMES + "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 999: unknown error\n"
    assert primary(tri_text(tmp_path, text))[2] != "gpu_build_or_driver_mismatch"
