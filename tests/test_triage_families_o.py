"""General triage families added with corpus round o (issue 12), on real excerpts (tuning cases of
``tests/corpus/`` and fixtures from other public threads) and against lines of the same family that must
not fire:

- torch's load_state_dict key lines ("Missing key(s) in state_dict:", "Unexpected key(s) in state_dict:")
  pasted without their exception line are a checkpoint that does not fit the model;
- a native backtrace through torch.save's zip writer (mz_zip_writer_*, PyTorchStreamWriter::) is a crash
  while writing a checkpoint, whatever prints the backtrace (UCX, faulthandler, a signal handler);
- Slurm's container plugin failing to import or start the image (pyxis/enroot) is a setup failure;
- command lines rejected by the other parsers (Rust's clap, Python's click) as argparse's are;
- cuDNN/cuBLAS execution status errors are CUDA faults;
- a Rust launcher's death (a thread's panic, main returning "Error: ShardCannotStart") is fatal: such a log
  is never Incomplete;
- an exception raised by a process whose own message names a checkpoint path is a checkpoint failure.
"""

from __future__ import annotations

from pathlib import Path

from tests.triage_helpers import primary, tri, tri_text, tuning_case


def test_state_dict_key_lines_are_a_checkpoint_that_does_not_fit(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("o-ckpt-megatron-unexpected-extra-state-key"))
    assert primary(res) == ("Fail", "checkpoint_failure", "state_dict_keys_mismatch")
    missing = '        Missing key(s) in state_dict: "decoder.layers.0.mlp.experts.weight1", "x".\n'
    assert primary(tri_text(tmp_path, missing))[1] == "checkpoint_failure"
    # prose about keys is not torch's line
    assert tri_text(tmp_path, "INFO all keys in state_dict matched\n")["primary"] is None


def test_a_native_crash_in_the_zip_writer_is_a_checkpoint_failure(tmp_path: Path) -> None:
    for case_id in (
        "o-ckpt-nemo-multinode-async-save-segfault-ucx",
        "g-ckpt-swift-megatron-save-optimizer-segfault-crc32",
    ):
        res = tri_text(tmp_path, tuning_case(case_id))
        assert primary(res)[:2] == ("Fail", "checkpoint_failure"), case_id


def test_a_container_that_pyxis_could_not_start_is_a_setup_failure(tmp_path: Path) -> None:
    for case_id in ("o-config-pyxis-run-enroot-permission-denied", "o-config-pyxis-private-registry-401"):
        res = tri_text(tmp_path, tuning_case(case_id))
        assert primary(res) == ("Blocked", "config_error", "container_start_failed"), case_id
    # pyxis importing an image it then started is no failure
    ok = "pyxis: importing docker image: nvcr.io#nvidia/pytorch:24.05-py3\npyxis: imported docker image\n"
    assert tri_text(tmp_path, ok)["primary"] is None


def test_other_command_line_parsers_rejecting_the_command_line(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("o-config-tgi-disable-custom-kernels-True"))  # clap
    assert primary(res) == ("Blocked", "config_error", "launcher_rejected_arguments")
    assert primary(tri("click_no_such_option_opcut")) == (
        "Blocked",
        "config_error",
        "launcher_rejected_arguments",
    )
    # a program's own "error: invalid value" prose inside a line is not a parser's rejection
    assert (
        tri_text(tmp_path, "WARN got error: invalid value 'x' for 'y' from the API, retrying\n")["primary"]
        is None
    )


def test_cudnn_and_cublas_execution_status_errors_are_cuda_faults(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("o-cudaerr-te-cudnn-execution-failed-fused-attn-4090"))
    assert primary(res)[:2] == ("Fail", "cuda_error")
    # a status name in a list of supported ones is no error
    assert tri_text(tmp_path, "cuDNN status map loaded: CUDNN_STATUS_SUCCESS=0\n")["primary"] is None


def test_a_rust_launchers_death_is_fatal(tmp_path: Path) -> None:
    for case_id in ("o-unknown-tgi-shard-signal-4-cannot-start", "o-oom-tgi-warmup-panic-allocation-exceeds"):
        res = tri_text(tmp_path, tuning_case(case_id))
        assert res["verdict"] == "Fail", case_id
    # a variant name in prose, or "Error: " with a sentence, is not main() returning an error
    assert tri_text(tmp_path, "Error: the server is busy, try again\n")["verdict"] != "Fail"


def test_an_exception_naming_a_checkpoint_path_is_a_checkpoint_failure() -> None:
    for name in ("checkpoint_dir_permission_sae", "checkpoint_resume_permission_darkflow"):
        assert primary(tri(name))[:2] == ("Fail", "checkpoint_failure"), name


def test_the_zip_writer_named_outside_a_backtrace_is_no_crash(tmp_path: Path) -> None:
    # building torch from source compiles miniz: its warnings name the same functions
    build = "/miniz/miniz_zip.c: In function 'mz_zip_writer_add_mem_ex_v2':\n"
    assert tri_text(tmp_path, build)["primary"] is None
    for name in ("state_dict_keys_dsrnet", "state_dict_keys_deep_thinking"):
        res = tri(name)
        assert primary(res)[:2] == ("Fail", "checkpoint_failure"), name
        assert any(f["rule"] == "state_dict_keys_mismatch" for f in res["findings"]), name


def test_a_config_object_refusing_its_values_is_a_config_error(tmp_path: Path) -> None:
    # pydantic's "N validation error for <Name>" (vLLM's engine configs)
    for name in ("pydantic_config_validation_hunyuan", "pydantic_config_validation_minicpm"):
        res = tri(name)
        assert primary(res) == ("Blocked", "config_error", "exc_config_validation"), name
        assert "missing_dependency" in [a["class"] for a in res["alternatives"]], name
    res = tri_text(tmp_path, tuning_case("o-config-verl-vllm024-chunked-prefill-false-validation"))
    assert primary(res)[:2] == ("Blocked", "config_error")
    # another ValidationError message is not pydantic's
    assert (
        primary(tri_text(tmp_path, "ValidationError: the checksum of shard 3 did not match\n"))[2]
        != "exc_config_validation"
    )


def test_hf_argument_parser_rejecting_a_config_files_keys(tmp_path: Path) -> None:
    # parse_dict / parse_yaml_file: "Some keys are not used", as parse_args' "Some specified arguments ..."
    res = tri_text(tmp_path, tuning_case("o-config-llamafactory-predict-yaml-wrong-subcommand"))
    assert primary(res) == ("Blocked", "config_error", "launcher_rejected_arguments")


def test_an_unnamed_exception_in_checkpoint_conversion_is_a_checkpoint_failure(tmp_path: Path) -> None:
    # HF <-> Megatron conversion: Megatron-Bridge's conversion package, Megatron forks' converter scripts
    for case_id in (
        "o-ckpt-megatronllama-hf2megatron-empty-state-dict-keyerror",
        "ckpt-nemo-rl-megatron-worker-autobridge-architecture-not-supported",
    ):
        res = tri_text(tmp_path, tuning_case(case_id))
        # (the first one's KeyError names a parameter, 'model.embed_tokens.weight': exc_state_dict_key says so too)
        assert primary(res)[:2] == ("Fail", "checkpoint_failure"), case_id
        assert primary(res)[2] in ("frames_checkpoint", "exc_state_dict_key"), case_id
    # the same KeyError in a tokenizer's conversion of tokens is not one
    tok = (
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 9, in <module>\n'
        "    ids = convert_tokens_to_ids(batch)\n"
        '  File "/app/tok.py", line 3, in convert_tokens_to_ids\n'
        "    return [vocab[t] for t in batch]\n"
        "KeyError: 'zz'\n"
    )
    assert primary(tri_text(tmp_path, tok))[1] != "checkpoint_failure"


def test_a_bare_exception_line_under_a_records_time_or_a_collectors_prefix(tmp_path: Path) -> None:
    # "[%(asctime)s] Type: message", and a Ray worker's exception line under journald's prefix
    for line in (
        "[2025-03-04 10:11:12,345] RuntimeError: the step failed",
        "[2025-03-04 10:11:12,345] (APIServer pid=1) RuntimeError: the step failed",
        "Nov 23 10:11:12 gpu-node-3 python[48213]: (APIServer pid=1) RuntimeError: the step failed",
    ):
        assert primary(tri_text(tmp_path, line + "\n"))[:2] == ("Fail", "unknown_error"), line
    # a record whose message only mentions an exception name is no exception line
    assert (
        tri_text(tmp_path, "[2025-03-04 10:11:12,345] retrying after RuntimeError in step 3\n")["verdict"]
        != "Fail"
    )


def test_a_value_error_that_names_the_setting_to_change_is_a_config_error(tmp_path: Path) -> None:
    assert primary(tri("setting_rejected_lightning_val_check")) == (
        "Blocked",
        "config_error",
        "exc_setting_rejected",
    )
    res = tri_text(tmp_path, tuning_case("o-config-verl-chunked-prefill-batched-tokens-9216"))
    assert primary(res) == ("Blocked", "config_error", "exc_setting_rejected")
    # a ValueError that gives no such advice stays unexplained
    res = tri_text(tmp_path, "ValueError: could not convert string to float: 'abc'\n")
    assert primary(res)[2] != "exc_setting_rejected"


def test_a_death_told_by_a_fatal_line_alone_is_read_for_its_component(tmp_path: Path) -> None:
    # TGI's warmup panic: "thread 'main' panicked at 'Unable to warmup model: ... (out of memory) ...'"
    res = tri_text(tmp_path, tuning_case("o-oom-tgi-warmup-panic-allocation-exceeds"))
    assert primary(res)[:2] == ("Fail", "cuda_oom")
    assert "unknown_error" in [a["class"] for a in res["alternatives"]]
    # a panic that names nothing stays unknown_error
    res = tri_text(
        tmp_path, "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', src/main.rs:9:5\n"
    )
    assert primary(res)[:2] == ("Fail", "unknown_error")


def test_a_rust_main_error_with_a_one_word_variant_is_a_death(tmp_path: Path) -> None:
    # Rust prints main()'s error as its Debug form: "Error: Warmup(Generation(...))" is a death, and
    # "Not enough memory to handle N prefill tokens" names the GPU memory budget
    text = (
        "INFO text_generation_router: router/src/main.rs:210: Warming up model\n"
        'Error: Warmup(Generation("Not enough memory to handle 4096 prefill tokens. '
        'You need to decrease `--max-batch-prefill-tokens`"))\n'
    )
    assert primary(tri_text(tmp_path, text))[:2] == ("Fail", "cuda_oom")
    # the Python side of the same failure, an unexplained RuntimeError that says so
    res = tri_text(tmp_path, tuning_case("o-oom-tgi-awq-warmup-prefill-tokens"))
    assert primary(res)[:2] == ("Fail", "cuda_oom")
    # prose after "Error:" is no death
    res = tri_text(tmp_path, "Error: Something went wrong, retrying\nstep 1/10 loss=0.5\n")
    assert res["verdict"] != "Fail"
