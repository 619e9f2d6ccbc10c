"""Triage mechanisms and families added with corpus round s (issue 12), on real excerpts (tuning cases
of ``tests/corpus/`` and fixtures from other public threads) and against lines that must not fire:

- an IPython/Jupyter traceback cut before its exception line still names the exception: its header
  line carries the type ("OutOfMemoryError      Traceback (most recent call last)");
- an excerpt that starts inside an indented traceback (pip's subprocess output, six columns in) is read
  with that indentation: its exception line is seen, and the lines after it are output again, not
  source lines quoted by a frame;
- a CUDA check macro's "Failed: Cuda error FILE.cuh:N 'msg'" is a CUDA fault, a CUDA-graph crash next
  to graph capture; torch.compile's "accessing tensor output of CUDAGraphs that has been overwritten";
- NCCL failing to create its /dev/shm segment is a full /dev/shm; Ray's OutOfDiskError is a full disk;
- torch.distributed.checkpoint's CheckpointException is a checkpoint failure (not NCCL);
- huggingface_hub's OfflineModeIsEnabled and transformers' "You are trying to access a gated repo" are
  a model that is not available;
- a version requirement that an exception's message states ("maximum version 2.5.8 is supported",
  "Peewee >= 2.4.3 is required") is a dependency problem; a deep Megatron module missing is bridge_import
  (the stack at another version), with container_venv_mismatch as the alternative;
- XLA's "NCCL operation ncclX() failed" is NCCL; DeepSpeed's zero_to_fp32.py in the frames is a checkpoint
  conversion; a launcher script whose shebang interpreter is gone ("bad interpreter") and uv ignoring the
  active VIRTUAL_ENV (soft: only when a worker then fails) are an environment mismatch; Ray's object store
  not fitting /dev/shm is a full /dev/shm;
- a CUDA toolkit that does not match torch's (DeepSpeed's op builder, torch.utils.cpp_extension) is a
  dependency problem; Ray's repeated "Unable to connect to GCS at" is the cluster; NeMo-RL's ray.sub
  "[ERROR] Background srun ... died" is the cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import primary, tri, tri_text, tuning_case


def _cut_before_exception_line(text: str, exc_prefix: str) -> str:
    lines = text.splitlines()
    cut = max(i for i, line in enumerate(lines) if line.startswith(exc_prefix))
    return "\n".join(lines[:cut]) + "\n"


def test_an_ipython_traceback_cut_before_its_exception_line_is_named_by_its_header(tmp_path: Path) -> None:
    full = tuning_case("g-data-datasets-tsv-builder-name-no-script")
    assert primary(tri_text(tmp_path, full))[1] == "data_missing"
    res = tri_text(tmp_path, _cut_before_exception_line(full, "FileNotFoundError:"))
    verdict, cls, rule = primary(res)
    assert verdict == "Blocked" and cls in ("data_missing", "hf_offline_missing"), res
    # a Jupyter OOM pasted down to its last frame (the notebook form of a cut traceback)
    oom = (
        "---------------------------------------------------------------------------\n"
        "OutOfMemoryError                          Traceback (most recent call last)\n"
        "Cell In[21], line 2\n"
        '----> 2 model.save_pretrained_merged(out_dir, tokenizer, save_method="merged_16bit")\n'
    )
    res = tri_text(tmp_path, oom)
    assert primary(res)[:2] == ("Fail", "cuda_oom")
    assert res["primary"]["rule"].endswith("+type_in_ipython_header") and res["primary"]["confidence"] <= 0.5


def test_an_ipython_header_of_an_unknown_type_names_nothing(tmp_path: Path) -> None:
    text = (
        "---------------------------------------------------------------------------\n"
        "ZeroDivisionError                         Traceback (most recent call last)\n"
        "Cell In[3], line 1\n"
        "----> 1 1/0\n"
    )
    verdict, cls, rule = primary(tri_text(tmp_path, text))
    assert cls == "unknown_error" and "type_in_ipython_header" not in (rule or "")
    # a plain header (no type before it) is no IPython header
    assert primary(
        tri_text(tmp_path, 'Traceback (most recent call last)\n  File "a.py", line 1, in <module>\n')
    )[1] == ("unknown_error")


def test_an_excerpt_starting_inside_an_indented_traceback_keeps_its_indentation() -> None:
    res = tri("cuda_toolkit_mismatch_pip_subprocess", exit_code=1)
    assert primary(res) == ("Blocked", "missing_dependency", "gpu_build_or_driver_mismatch")
    rules = {f["rule"] for f in res["findings"]}
    # the pip lines after the traceback are read as output again, not as a frame's source lines
    assert "extension_build_failed" in rules


def test_lines_indented_less_than_the_frame_are_not_its_source(tmp_path: Path) -> None:
    text = (
        '        File "/venv/lib/python3.13/site-packages/torch/utils/cpp_extension.py", line 2225, in _run_ninja_build\n'
        "          raise RuntimeError(message) from e\n"
        "      RuntimeError: Error compiling objects for extension\n"
        "  ERROR: Failed building wheel for transformer_engine_torch\n"
    )
    assert primary(tri_text(tmp_path, text))[:2] == ("Blocked", "missing_dependency")


@pytest.mark.parametrize(
    ("name", "verdict", "cls", "rule"),
    [
        (
            "vllm_custom_allreduce_failed_after_capture",
            "Fail",
            "cuda_graph_crash",
            "cuda_fault+context:cuda_graph",
        ),
        ("cudagraph_trees_output_overwritten", "Fail", "cuda_graph_crash", "cuda_graph_warmup_error"),
        ("nccl_shm_segment_nccl_tests", "Blocked", "no_space", "nccl_shm_segment"),
        ("nccl_shm_segment_ray_runner", "Blocked", "no_space", "nccl_shm_segment"),
        ("ray_out_of_disk_object_store", "Blocked", "no_space", "ray_out_of_disk"),
        ("ray_out_of_disk_notebook_header", "Blocked", "no_space", "ray_out_of_disk"),
        ("dcp_checkpoint_exception_ranks", "Fail", "checkpoint_failure", "checkpoint_error_text"),
        ("hf_offline_mode_is_enabled", "Blocked", "hf_offline_missing", "hf_local_entry_missing"),
        (
            "cuda_toolkit_mismatch_deepspeed_builder",
            "Blocked",
            "missing_dependency",
            "gpu_build_or_driver_mismatch",
        ),
        ("ray_gcs_unable_to_connect_cli", "Blocked", "ray_cluster", "ray_gcs_unreachable_retries"),
        ("ray_gcs_unable_to_connect_serve", "Blocked", "ray_cluster", "ray_gcs"),
        ("version_requirement_runtime_error", "Blocked", "missing_dependency", "exc_version_requirement"),
        ("version_requirement_numpy_api", "Blocked", "missing_dependency", "exc_version_requirement"),
        ("deepspeed_zero_to_fp32_frames", "Fail", "checkpoint_failure", "frames_checkpoint"),
        ("nccl_xla_operation_failed", "Fail", "nccl", "nccl_error"),
        ("venv_bad_interpreter_conda_script", "Blocked", "container_venv_mismatch", "venv_bad_interpreter"),
        ("ray_object_store_exceeds_dev_shm", "Blocked", "no_space", "shm_exhausted"),
        ("package_metadata_not_found", "Blocked", "missing_dependency", "exc_package_not_found"),
    ],
)
def test_round_s_families_on_other_public_threads(name: str, verdict: str, cls: str, rule: str) -> None:
    assert primary(tri(name)) == (verdict, cls, rule)


def test_round_s_families_on_tuning_cases(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("sc-vllm-custom-allreduce-invalid-arg-after-full-graph-capture"))
    assert primary(res)[:2] == ("Fail", "cuda_graph_crash")
    res = tri_text(tmp_path, tuning_case("sc-pytorch-dcp-load-missing-key-bigger-model"))
    assert primary(res)[:2] == ("Fail", "checkpoint_failure")
    res = tri_text(tmp_path, tuning_case("sd-video-diffusion-docker-dev-shm-nccl-segment"))
    assert primary(res)[:2] == ("Blocked", "no_space")


def test_a_version_requirement_in_an_exception_message_is_a_dependency(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("pb-te-flashattn-max-version"))
    assert primary(res)[:2] == ("Blocked", "missing_dependency")
    # a bound on a setting (no dotted version) is not a package version
    for text in (
        "AssertionError: micro batch size >= 2 is required\n",
        "ValueError: num_workers must be >= 1\n",
    ):
        assert primary(tri_text(tmp_path, text))[1] != "missing_dependency", text


def test_a_deep_megatron_module_missing_is_the_stack_unless_a_worker_printed_it(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("m-bridge-import-slime-megatron-training-missing"))
    assert primary(res) == ("Blocked", "bridge_import", "import_bridge_submodule")
    assert "container_venv_mismatch" in [a["class"] for a in res["alternatives"]]
    # printed by a Ray actor (NeMo-RL's policy worker): that worker's env holds another Megatron
    line = "(MegatronPolicyWorker pid=35477) ModuleNotFoundError: No module named 'megatron.core.distributed.custom_fsdp'\n"
    assert primary(tri_text(tmp_path, line)) == (
        "Blocked",
        "container_venv_mismatch",
        "import_bridge_submodule",
    )


def test_uv_ignoring_the_active_venv_explains_a_worker_that_then_dies(tmp_path: Path) -> None:
    # alone (uv's warning in a shell session) it is no failure
    res = tri("uv_virtual_env_ignored_noise")
    assert primary(res)[0] == "Incomplete"
    assert [f["rule"] for f in res["findings"]] == ["uv_virtual_env_ignored"]
    # before a Ray worker's traceback (ray#56583, round t tuning) it is the cause
    res = tri_text(tmp_path, tuning_case("ta-ray-uv-run-worker-new-venv-ignores-active"))
    assert primary(res) == ("Blocked", "container_venv_mismatch", "uv_virtual_env_ignored")


def test_xla_nccl_operation_failures_but_not_a_missing_nccl_library(tmp_path: Path) -> None:
    assert primary(tri_text(tmp_path, tuning_case("tb-jax-pmap-xla-ncclgroupend-unhandled-cuda")))[:2] == (
        "Fail",
        "nccl",
    )
    text = (
        "INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:134: NCCL operation ncclGetUniqueId(&id) failed: "
        "Unable to load NCCL library. Multi-GPU collectives will not work.\n"
    )
    assert primary(tri_text(tmp_path, text))[2] != "nccl_error"


def test_a_name_missing_from_the_bridge_stack_is_bridge_import(tmp_path: Path) -> None:
    from console.triage.rules import default_catalog

    for case in (
        "bridge-mbridge-qwen3vl-cannot-import-from-megatron-core-utils",
        "bridge-accelerate-megatron-get-args-unknown-location",
    ):
        assert primary(tri_text(tmp_path, tuning_case(case)))[:2] == ("Blocked", "bridge_import"), case
    # a name missing from a third-party package stays a dependency problem
    text = "ImportError: cannot import name 'cached_download' from 'huggingface_hub' (/venv/lib/python3.11/site-packages/huggingface_hub/__init__.py)\n"
    assert primary(tri_text(tmp_path, text))[:2] == ("Blocked", "missing_dependency")
    # the rule names the same stack as [imports] bridge_modules
    cat = default_catalog()
    rule = next(r for r in cat.rules if r.id == "import_name_from_bridge_stack")
    for mod in cat.imports.bridge_modules:
        assert rule.regex.search(f"cannot import name 'x' from '{mod}.sub'"), mod


def test_conflicting_gpu_visibility_explains_a_runtime_abort_not_a_warning(tmp_path: Path) -> None:
    # warnings only (the runtime picked one variable and went on): no failure
    res = tri("rocm_conflicting_visibility_warning")
    assert primary(res)[0] == "Incomplete" and {f["rule"] for f in res["findings"]} == {
        "rocr_conflicting_visibility"
    }
    # at glog's FATAL severity ("F agent.cpp:245]") it is the runtime aborting on it
    res = tri_text(tmp_path, tuning_case("sa-rocm-therock-hip-visible-vs-gpu-device-ordinal-fatal"))
    assert primary(res) == ("Blocked", "rocr_visible_devices", "rocr_conflicting_visibility+glog_fatal")


def test_the_gated_repo_message_alone_names_the_model_not_available(tmp_path: Path) -> None:
    text = (
        "OSError: You are trying to access a gated repo.\n"
        "Make sure to have access to it at https://huggingface.co/meta-llama/Llama-2-7b-hf.\n"
    )
    assert primary(tri_text(tmp_path, text))[:2] == ("Blocked", "hf_offline_missing")


def test_near_misses_of_the_round_s_families(tmp_path: Path) -> None:
    # a single GCS retry warning that the run goes on after is a wait, not a cluster failure (a log that ends
    # on it is: round ad, tests/test_triage_families_ad.py)
    one = (
        "2022-09-28 19:36:46,554\tWARNING utils.py:1333 -- Unable to connect to GCS at 10.0.0.1:6379. Check that "
        "(1) Ray GCS with matching version started successfully at the specified address.\n"
    ) + "".join(f"(pid=7{i}) worker {i} registered\n" for i in range(8))
    assert primary(tri_text(tmp_path, one))[0] == "Incomplete"
    # Ray's disk-usage warning is no OutOfDiskError (it stays the soft rule it was)
    warn = (
        "(raylet) file_system_monitor.cc:116: /tmp/ray/session_x is over 95% full, available space: 10 GB\n"
    )
    assert primary(tri_text(tmp_path, warn))[2] == "no_space_ray_disk_full"
    # a "Failed:" line that names no CUDA source is no CUDA fault
    assert primary(tri_text(tmp_path, "Failed: 3 tests, see report.txt 'summary'\n"))[1] != "cuda_error"
    # NCCL's shm INFO lines in a healthy run are no failure
    ok = "node:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n"
    assert primary(tri_text(tmp_path, ok))[0] == "Incomplete"


def test_nemo_rl_ray_sub_failure_lines(tmp_path: Path) -> None:
    for line in (
        "[ERROR] Background srun 'ray-head' (pid=812) exited before the head; failing fast.",
        "[ERROR] Timed out waiting for all workers to connect (3/4 after 30 min)",
        "[ERROR] ENDED detected before head started, exiting.",
    ):
        assert primary(tri_text(tmp_path, line + "\n"))[:2] == ("Blocked", "ray_cluster"), line
    # ray.sub's own progress line, in a run that went on, is no failure
    ok = "Waiting for all workers to connect to the Ray head\nAll workers connected\nStep 1/10\n"
    assert primary(tri_text(tmp_path, ok))[1] != "ray_cluster"
