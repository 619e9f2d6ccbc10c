"""Triage added with corpus round au (issue 12), on real excerpts (tuning cases of ``tests/corpus/``, real fixtures)
and against near misses that must not fire:

- a failed import (or a version conflict) whose frames come from an environment in the user's home (the user site
  ``~/.local``, a venv there) and from one outside it (``/usr``, ``/opt``, an image's conda) ran with two
  environments mixed: container_venv_mismatch, with missing_dependency as the alternative;
- a loss printed as a one-element array ("loss: [nan]", DeepXDE's rows of "[nan]" cells) is a NaN loss;
- ROCm's words for a GPU fault (the amdgpu driver's page fault, the HSA runtime's "Memory access fault by GPU node")
  are a CUDA-class fault, and HIP's "hipErrorNoBinaryForGpu" is the missing-kernel-image build mismatch;
- a trainer whose components stopped sending heartbeats, or never started, is a hang;
- a batch size that "needs to be a round multiple of" the number of processes is a parallel-size setting;
- Slurm's container plugin failing to import an image is an umbrella: the cause enroot logs under it comes first;
- vLLM's own NCCL layer (device_communicators/pynccl.py) names the collective, not the generation engine;
- bitsandbytes falling back to its CPU build, and a placement Ray cannot make yet, are causes only of a run that then
  stopped (soft); FSDP's state-dict modules are checkpoint frames; a Hub client's 404 on a huggingface.co URL is a
  model that is not there;
- a paste both numbered or hard-wrapped and prefixed by a collector ("[stderr]") is read without both; IPython 8's
  frame ("File /x/y.py:12, in f()") opens a traceback pasted without its header, as Python's own frame does;
- NeMo's warning that Megatron-Core is not importable (soft); PaddleNLP's and GPT-NeoX's loss-scale overflow loops;
  any CUDA runtime error code by name ("cudaErrorInvalidValue") is a CUDA fault;
- round ax: the fatal tier also reads the shell's words for a signal alone on a line ("Bus error"), a build step's
  "returned a non-zero code: 137" and a Go logger's fatal level ("level=fatal", "FATA[0000]"); GluonTS's and
  TensorFlow's NaN-loss sentences are NaN losses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import assert_no_finding, assert_primary, primary, tri, tri_text, tuning_case

# (tuning case, verdict, class, rule) of each family
TUNING_CASES = [
    (
        "ta-torchrun-entrypoint-mixed-site-packages",
        "Blocked",
        "container_venv_mismatch",
        "import_mixed_environments",
    ),
    (
        "vb-singularity-home-venv-shadows-container-scipy",
        "Blocked",
        "container_venv_mismatch",
        "exc_version_conflict+mixed_environments",
    ),
    (
        "ale-mriqc-singularity-home-local-nipype-shadows-image",
        "Blocked",
        "container_venv_mismatch",
        "frames_cut_in_import_chain+mixed_environments",
    ),
    ("aib-paddleslim-total-iter-loss-nan-lower-lr", "Fail", "metric_failure", "nan_inf_metric"),
    ("aaa-deepxde-fp32-loss-nan-step-2000", "Fail", "metric_failure", "nan_inf_metric"),
    ("auf-rocm-mi300x-vllm-flashattn-gpu-page-fault", "Fail", "cuda_error", "cuda_fault"),
    (
        "auf-rocm-mi250x-missing-code-object-invalid-device-function",
        "Blocked",
        "missing_dependency",
        "gpu_build_or_driver_mismatch",
    ),
    ("auh-sample-factory-no-heartbeat-inference-worker", "Fail", "hang", "hang_reported"),
    ("auh-quad-swarm-sf-components-not-started", "Fail", "hang", "hang_reported"),
    ("aue-accelerate-split-batches-not-multiple-of-procs", "Blocked", "config_error", "parallel_sizes"),
    ("qd-swift-grpo-multiturn-sp-split-not-multiple", "Blocked", "config_error", "parallel_sizes"),
    ("aud-pyxis-squashfs-no-space-run-pyxis", "Blocked", "no_space", "no_space_errno28"),
    ("auf-rocm-vllm-pynccl-allreduce-warmup-p2p", "Fail", "nccl", "component:comp_collective"),
    (
        "aue-bnb-cuda-setup-libcudart-windows-kohya",
        "Blocked",
        "missing_dependency",
        "bitsandbytes_cuda_setup",
    ),
    ("anb-ray-tune-pg-no-nodes-available", "Blocked", "ray_cluster", "ray_placement_pending"),
    ("aod-gpustack-vllm-tp16-exceeds-ray-gpus", "Blocked", "ray_cluster", "ray_placement_pending"),
    ("ase-coat-fsdp-optim-state-dtype-assert", "Fail", "checkpoint_failure", "frames_checkpoint"),
    (
        "ajb-ckpt-hf-trainer-fsdp-resume-state-dict-type-none",
        "Fail",
        "checkpoint_failure",
        "frames_checkpoint",
    ),
    (
        "yc-bnb-cuda121-nocublaslt-lib-missing-cpu-fallback",
        "Blocked",
        "missing_dependency",
        "bitsandbytes_cuda_setup",
    ),
    (
        "apb-ray-autoscaler-infeasible-placement-group-bundle",
        "Blocked",
        "ray_cluster",
        "ray_placement_pending",
    ),
    ("aie-candle-vllm-hfhub-404-typo-model-id", "Blocked", "hf_offline_missing", "hf_http_auth_status"),
    (
        "aka-nemo-ssm-megatron-core-not-imported-warning",
        "Blocked",
        "bridge_import",
        "megatron_core_unavailable",
    ),
    (
        "aof-megatron-llama-ckpt-convert-unable-to-import-megatron-path",
        "Blocked",
        "bridge_import",
        "megatron_core_unavailable",
    ),
    ("ard-gptneox-overflow-50-skipped", "Fail", "metric_failure", "loss_scale_minimum"),
    ("avc-paddlenlp-llama2-lora-optimizer-not-run-scale", "Fail", "metric_failure", "loss_scale_collapsing"),
    ("acf-taskflow-hetero-traversal-executable-graph-invalid-value", "Fail", "cuda_error", "cuda_fault"),
    # round ax: the fatal tier reads the shell's signal words, a build's non-zero code and a Go logger's fatal level
    ("axc-lightgbm-gpu-bus-error-tiny-bins-kernel-compile", "Fail", "unknown_error", "fatal:fatal_signal"),
    ("axf-swebench-base-image-build-exit-137", "Fail", "unknown_error", "fatal:fatal_exit_code"),
    (
        "axd-dcgm-exporter-fatal-module-not-loaded-watching-fields",
        "Fail",
        "unknown_error",
        "fatal:fatal_go_logger",
    ),
    ("axc-modeltime-gluonts-nbeats-nan-loss-batch-ignored", "Fail", "metric_failure", "nan_inf_metric"),
]

REAL_FIXTURES = [
    (
        "mixed_env_user_site_torchrun_tensorboard",
        "Blocked",
        "container_venv_mismatch",
        "import_mixed_environments",
    ),
    ("amdgpu_page_fault_mi300x_vllm", "Fail", "cuda_error", "cuda_fault"),
    ("sample_factory_no_heartbeat", "Fail", "hang", "hang_reported"),
    ("pyxis_enroot_squashfs_no_space", "Blocked", "no_space", "no_space_errno28"),
    ("paddle_loss_bracketed_nan", "Fail", "metric_failure", "nan_inf_metric"),
    ("bitsandbytes_cuda_setup_no_libcudart", "Blocked", "missing_dependency", "bitsandbytes_cuda_setup"),
    ("ray_autoscaler_no_node_type_for_bundle", "Blocked", "ray_cluster", "ray_placement_pending"),
    ("fsdp_state_dict_hook_fqn_assert", "Fail", "checkpoint_failure", "frames_checkpoint"),
    ("hf_rust_client_status_404", "Blocked", "hf_offline_missing", "hf_http_auth_status"),
    ("nemo_megatron_core_not_found_warning", "Blocked", "bridge_import", "megatron_core_unavailable"),
    ("paddlenlp_optimizer_not_run_loss_scale", "Fail", "metric_failure", "loss_scale_collapsing"),
    ("lightgbm_gpu_bus_error_shell", "Fail", "unknown_error", "fatal:fatal_signal"),
    ("docker_build_nonzero_code_137", "Fail", "unknown_error", "fatal:fatal_exit_code"),
    ("dcgm_exporter_logrus_fatal", "Fail", "unknown_error", "fatal:fatal_go_logger"),
    ("gluonts_batch_gave_nan_loss", "Fail", "metric_failure", "nan_inf_metric"),
]

NEAR_MISSES = [
    # a finite loss in a one-element array, and a printed array of several values
    "2022-12-08 17:57:31,371-INFO: Total iter: 0, epoch: 0, batch: 0, loss: [10.000229]",
    "2000      [5.47e+03]    [6.44e+03]    [1.00e+00]",
    # prose about page faults and heartbeats, no fault and no stop
    "amdgpu: page fault handling is documented in the kernel's amdgpu docs",
    "[2025-01-16 21:22:37,238][21824] Heartbeat connected on InferenceWorker_p0-w0",
    # a multiple that is satisfied, said as a rule in help text
    "--batch_size: an integer (default 8)",
    # a fused kernel Megatron-Core lacks is no missing Megatron-Core; a loss scale that stays high
    "gradient_accumulation_fusion requires FusedLayerNorm from megatron.core.fusions but it is not available.",
    "[ WARNING] - optimizer not run, scale_before: 65536.0, scale_after: 32768.0",
    # the signal words inside a sentence, an info-level Go log line, a zero exit of a build step
    "Bus error means the process touched memory it could not map.",
    'time="2020-12-15T11:28:40Z" level=info msg="DCGM successfully initialized!"',
    "Step 5/9 : RUN pip install -r requirements.txt (returned a zero code)",
]


@pytest.mark.parametrize(("case", "verdict", "cls", "rule"), TUNING_CASES)
def test_families_on_tuning_cases(tmp_path: Path, case: str, verdict: str, cls: str, rule: str) -> None:
    assert_primary(tri_text(tmp_path, tuning_case(case)), verdict, cls, rule)


@pytest.mark.parametrize(("name", "verdict", "cls", "rule"), REAL_FIXTURES)
def test_families_on_real_fixtures(name: str, verdict: str, cls: str, rule: str) -> None:
    assert_primary(tri(name), verdict, cls, rule)


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_near_misses(tmp_path: Path, line: str) -> None:
    assert_no_finding(tri_text(tmp_path, line + "\n"))


_IMPORT_IN = """Traceback (most recent call last):
  File "/opt/conda/bin/train", line 8, in <module>
    from app.cli import main
  File "{a}/lib/python3.10/site-packages/app/cli.py", line 3, in <module>
    import helper
  File "{b}/lib/python3.10/site-packages/helper/__init__.py", line 1, in <module>
    import numpy
ModuleNotFoundError: No module named 'numpy'
"""


def test_one_environment_is_a_missing_package(tmp_path: Path) -> None:
    """Frames from one environment (however many packages): the package is missing, nothing is mixed."""
    text = _IMPORT_IN.format(a="/opt/conda", b="/opt/conda")
    assert_primary(tri_text(tmp_path, text), "Blocked", "missing_dependency", "import_missing_module")
    text = _IMPORT_IN.format(a="/home/u/venv", b="/home/u/venv")
    assert_primary(tri_text(tmp_path, text), "Blocked", "missing_dependency", "import_missing_module")


def test_a_user_site_over_an_image_environment_is_mixed(tmp_path: Path) -> None:
    res = tri_text(tmp_path, _IMPORT_IN.format(a="/opt/conda", b="/home/u/.local"))
    assert_primary(res, "Blocked", "container_venv_mismatch", "import_mixed_environments")
    assert "missing_dependency" in [alt["class"] for alt in res["alternatives"]]


def test_a_bug_in_mixed_environments_stays_a_bug(tmp_path: Path) -> None:
    """Mixed environments change only a missing-package finding, not an error in the code itself."""
    text = _IMPORT_IN.format(a="/opt/conda", b="/home/u/.local").replace(
        "ModuleNotFoundError: No module named 'numpy'", "ZeroDivisionError: division by zero"
    )
    assert primary(tri_text(tmp_path, text))[:2] == ("Fail", "unknown_error")


def test_soft_causes_in_a_run_that_completed_are_no_failure(tmp_path: Path) -> None:
    text = (
        "CUDA SETUP: Required library version not found: libbitsandbytes_cuda121_nocublaslt.so.\n"
        "[2021-03-25 23:12:26,485 I 11137 11137] gcs_placement_group_scheduler.cc:150: Failed to schedule placement "
        "group __tune_f5843ca7__dca1fc85, try again\n"
        "Max number of steps has been reached, stopping training\n"
    )
    assert primary(tri_text(tmp_path, text))[0] in ("Pass", "Incomplete")


def test_a_numbered_paste_under_a_collector_prefix_is_read(tmp_path: Path) -> None:
    text = tuning_case("ta-torchrun-entrypoint-mixed-site-packages")
    numbered = "".join(f"{i:6d}\t{line}\n" for i, line in enumerate(text.splitlines(), 1))
    assert_primary(
        tri_text(tmp_path, numbered), "Blocked", "container_venv_mismatch", "import_mixed_environments"
    )


def test_ipython_frames_without_their_header_are_a_traceback(tmp_path: Path) -> None:
    text = (
        "File /opt/conda/lib/python3.9/site-packages/torch/distributed/fsdp/_state_dict_utils.py:365, in hook()\n"
        "----> 365 assert fqn in state_dict\n"
        "AssertionError\n"
    )
    assert_primary(tri_text(tmp_path, text), "Fail", "checkpoint_failure", "frames_checkpoint")


def test_a_cuda_code_of_another_class_keeps_its_class(tmp_path: Path) -> None:
    res = tri_text(tmp_path, "RuntimeError: CUDA runtime failed: cudaErrorMemoryAllocation (2)\n")
    assert primary(res)[:2] == ("Fail", "cuda_oom")


def test_a_pyxis_failure_alone_is_still_the_container_start(tmp_path: Path) -> None:
    text = "slurmstepd: error: pyxis: failed to import docker image\nslurmstepd: error: pyxis: printing contents\n"
    assert_primary(tri_text(tmp_path, text), "Blocked", "config_error", "container_start_failed")
