"""Triage families added with corpus rounds ab and ac (issue 12), on real excerpts (tuning cases of ``tests/corpus/`` and
fixtures from other public threads) and against near misses that must not fire:

- GPU allocation failures in other libraries' words: cuDNN's CUDNN_STATUS_ALLOC_FAILED, ONNX Runtime's arena
  ("Failed to allocate memory for requested buffer"), a trainer's own "OOM Detected" retry that then fails;
- NCCL's result strings after any NCCL name (TensorFlow's nccl_*.cc ops, "Error invoking NCCL", Caffe's
  ncclSuccess check, the C++ "NCCL Error 1: unhandled cuda error");
- "Loss is not finite" that ends training is a metric failure; a step skipped for it is not;
- torch operators another package registers ("operator torchvision::nms does not exist") are a dependency
  build mismatch; conda not finding the job's environment is the wrong environment; verl's missing
  register-center actor is the Ray cluster;
- Ray's IO workers failing to spill objects, and a raylet told it was marked dead, are the cluster; TensorFlow's
  checkpoint checksum mismatch is a corrupted checkpoint; a multi-node launcher's remote shell not finding the
  driver's interpreter path is the wrong environment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import assert_no_finding, assert_primary, primary, tri, tri_text, tuning_case


@pytest.mark.parametrize(
    ("name", "verdict", "cls", "rule"),
    [
        ("cudnn_alloc_failed_lua_torch", "Fail", "cuda_oom", "cuda_oom"),
        ("onnxruntime_arena_alloc_failed_cuda", "Fail", "cuda_oom", "cuda_oom"),
        ("oom_detected_retry_then_traceback", "Fail", "cuda_oom", "oom_detected_retry"),
        ("nccl_error_what_unhandled_cuda", "Fail", "nccl", "nccl_error"),
        ("conda_env_not_found_activate", "Blocked", "container_venv_mismatch", "conda_env_not_found"),
        (
            "torchvision_operator_missing_one_line",
            "Blocked",
            "missing_dependency",
            "exc_torch_operator_missing",
        ),
        ("verl_register_center_missing_single_node", "Blocked", "ray_cluster", "exc_verl_register_center"),
        # torch.compile finding no triton: named by the component the message mentions (a package not installed)
        ("inductor_triton_not_installed", "Blocked", "missing_dependency", "exc_install_hint"),
        ("ray_io_worker_spilling_failed", "Blocked", "ray_cluster", "ray_object_spilling_failed"),
        ("tf_restore_checksum_mismatch", "Fail", "checkpoint_failure", "tf_checkpoint_checksum_mismatch"),
        (
            "pdsh_remote_env_python_missing",
            "Blocked",
            "container_venv_mismatch",
            "launcher_env_executable_missing",
        ),
    ],
)
def test_round_ab_families_on_real_fixtures(name: str, verdict: str, cls: str, rule: str) -> None:
    assert_primary(tri(name), verdict, cls, rule)


@pytest.mark.parametrize(
    ("case", "verdict", "cls"),
    [
        ("aba-cntk-cudnn-alloc-failed-resnet-minibatch", "Fail", "cuda_oom"),
        ("aba-onnxruntime-bfcarena-reducesum-alloc-failed", "Fail", "cuda_oom"),
        ("aba-sd-dreambooth-oom-detected-reducing-batch-to-zero", "Fail", "cuda_oom"),
        ("aba-3dr1-sft-loss-not-finite-terminate", "Fail", "metric_failure"),
        ("aba-pass-ll3da-loss-not-finite-skip-step-continues", "Incomplete", None),
        ("abb-caffe-nccl-check-failed-invalid-data-type", "Fail", "nccl"),
        ("abb-flavr-terminate-nccl-error1-unhandled-cuda", "Fail", "nccl"),
        ("abb-tf-jupyter-ncclallreduce-unhandled-cuda", "Fail", "nccl"),
        ("abb-fastnn-tf1-nccl-communicator-unhandled-system", "Fail", "nccl"),
        ("abb-verl-raytaskerror-register-center-actor-missing", "Blocked", "ray_cluster"),
        ("abc-missingdep-torchvision-nms-operator-missing-on-import", "Blocked", "missing_dependency"),
        ("abc-venv-ray-runtime-env-conda-env-not-found-worker-loop", "Blocked", "container_venv_mismatch"),
        ("acb-ray-io-worker-spilling-objects-nonetype", "Blocked", "ray_cluster"),
        ("acb-ray-raylet-glog-mistakenly-marked-dead", "Blocked", "ray_cluster"),
        ("acc-horovodrun-remote-host-lacks-pyenv-interpreter", "Blocked", "container_venv_mismatch"),
        ("acd-pointnet-tf-restorev2-checksum-mismatch", "Fail", "checkpoint_failure"),
    ],
)
def test_round_ab_families_on_tuning_cases(tmp_path: Path, case: str, verdict: str, cls: str | None) -> None:
    assert primary(tri_text(tmp_path, tuning_case(case)))[:2] == (verdict, cls)


@pytest.mark.parametrize(
    "text",
    [
        # a retry that worked: training goes on well past it
        "OOM Detected, reducing batch/grad size to 2/1.\n"
        + "".join(
            f"Steps:  {i}%| | {30 * i}/3000 [00:{10 + i}<1:05:10,  1.32s/it, loss=0.0{584 - i}, lr=1e-6]\n"
            for i in range(1, 9)
        ),
        # NCCL's own setup lines name no failure
        "node1:21:21 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
        "node1:21:21 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"
        "node1:21:60 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 3b000 - Init COMPLETE\n",
        # the trainer skips the step and goes on
        "Loss in not finite. Skip this training step.\n"
        "Epoch [0/5]; Iter [20/9450]; Loss 3.18; LR 1.00e-06; Iter time 3.70; ETA 9:40:02\n",
        # a diagnostic listing that looks for an interpreter (not a shell failing to run one)
        "$ ls /opt/venv/bin/python3.9\nls: cannot access '/opt/venv/bin/python3.9': No such file or directory\n",
        # "invalid usage" without any NCCL name
        "usage: train.py [-h] --config CONFIG\nhint: invalid usage of the cache flag is ignored\n",
    ],
)
def test_round_ab_near_misses_do_not_fire(tmp_path: Path, text: str) -> None:
    assert_no_finding(tri_text(tmp_path, text))
