"""Triage families and mechanisms added with corpus round z (issue 12), on real excerpts (tuning cases of
``tests/corpus/`` and fixtures from other public threads) and against near misses that must not fire:

- TensorBoard's "NaN or Inf found in input tensor" is soft (fp16 runs log it on skipped steps and go on);
- a vLLM worker terminated with SIGTERM at shutdown ("died, exit code: -15") is noise, not a death;
- TensorFlow: "Key ... not found in checkpoint" is a checkpoint that does not fit; "Resource exhausted: <path>"
  is a full disk; "failed to allocate ... from device" is a GPU OOM only when the run then fails or ends there;
- Keras weight loading frames are checkpoint loading; pickle corruption messages are a checkpoint read;
- torch's "unable to allocate shared memory(shm)" is a full /dev/shm; HIP's invalid device and XLA finding no
  ROCm device are visibility; a launcher that cannot find the environment's executable on a node, and a
  Windows global interpreter running `-m`, are the wrong environment;
- an API "removed in the NumPy 2.0 release" is a dependency version; pytest's "E   " error lines are read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import assert_primary, primary, tri, tri_text, tuning_case


@pytest.mark.parametrize(
    ("name", "verdict", "cls", "rule"),
    [
        ("tf_key_not_in_checkpoint_l2copy", "Fail", "checkpoint_failure", "tf_key_not_in_checkpoint"),
        ("tf_device_alloc_oom_then_stopped", "Fail", "cuda_oom", None),
        ("numpy2_float_removed_pytest", "Blocked", "missing_dependency", "exc_removed_in_release"),
        ("slurm_execve_accelerate_missing_node", "Blocked", "container_venv_mismatch", None),
        ("tensorboard_nan_warning_training_goes_on", "Incomplete", None, None),
    ],
)
def test_round_z_families_on_real_fixtures(
    name: str, verdict: str, cls: str | None, rule: str | None
) -> None:
    assert_primary(tri(name), verdict, cls, rule)


@pytest.mark.parametrize(
    ("case", "verdict", "cls"),
    [
        ("za-wenet-nan-inf-input-tensor-warning-ignore", "Incomplete", None),
        ("za-instructlab-vllm-worker-died-sigterm-training-ok", "Incomplete", None),
        ("zc-automl-effdet-restore-momentum-key-not-found", "Fail", "checkpoint_failure"),
        ("zc-unetpp-keras-load-weights-zero-layers", "Fail", "checkpoint_failure"),
        ("zc-stereoanywhere-inner-data-pkl-persistent-id", "Fail", "checkpoint_failure"),
        ("zc-geti-tune-compose-shm-allocate-failed", "Blocked", "no_space"),
        ("zc-deepspeech-tf-tmp-checkpoint-home-full", "Blocked", "no_space"),
        ("zd-jax-rocm-multiprocess-hip-pinned-ordinal1-invalid-device", "Blocked", "rocr_visible_devices"),
        ("zd-comfyui-lora-node-spawns-system-python-no-accelerate", "Blocked", "container_venv_mismatch"),
        ("zd-slurm-srun-accelerate-execve-missing-on-second-node", "Blocked", "container_venv_mismatch"),
        ("ze-rocm-tf-hiperror-1002-allocate-fail", "Fail", "cuda_oom"),
        ("zf-atrain-numpy2-compiled-module-and-np-nan", "Blocked", "missing_dependency"),
    ],
)
def test_round_z_families_on_tuning_cases(tmp_path: Path, case: str, verdict: str, cls: str | None) -> None:
    assert primary(tri_text(tmp_path, tuning_case(case)))[:2] == (verdict, cls)


def test_near_misses_of_the_round_z_families(tmp_path: Path) -> None:
    # the TensorBoard warning in a run that then dies with nothing else explaining it is the cause
    text = 'Warning: NaN or Inf found in input tensor.\nTraceback (most recent call last):\n  File "t.py", line 1\nSystemExit: 1\n'
    assert primary(tri_text(tmp_path, text))[0] == "Fail"
    # TensorFlow retrying a smaller reservation and training on is not an OOM
    line = "E tensorflow/stream_executor/cuda/cuda_driver.cc:924] failed to allocate 1.97G (2120187392 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY\n"
    going = "".join(f"Epoch {i}/20 - loss: 0.{50 - i}\n" for i in range(1, 12))
    assert primary(tri_text(tmp_path, line + going))[0] == "Incomplete"
    # a worker that died with another exit code is still a death
    died = "ERROR 09-27 16:03:02 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 26460 died, exit code: 1\n"
    assert primary(tri_text(tmp_path, died))[0] == "Fail"
    # "Resource exhausted" of a GPU allocation is not a full disk
    oom = "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[8,1024]\n"
    assert primary(tri_text(tmp_path, oom))[1] == "cuda_oom"
    # a venv's or conda env's interpreter missing a module is a missing dependency, Windows too
    for exe in (r"C:\work\.venv\Scripts\python.exe", r"C:\Users\u\miniconda3\envs\t\python.exe"):
        text = f"{exe}: Error while finding module specification for 'accelerate.commands.launch' (ModuleNotFoundError: No module named 'accelerate')\n"
        assert primary(tri_text(tmp_path, text))[1] == "missing_dependency", exe
    # execve failing on a non-Python command is not an environment mismatch
    text = "slurmstepd: error: execve(): mkdir: No such file or directory\nsrun: error: n1: task 0: Exited with exit code 2\n"
    assert primary(tri_text(tmp_path, text))[1] != "container_venv_mismatch"


@pytest.mark.parametrize(
    ("case", "verdict", "cls"),
    [
        # round aa (tuning): PaddlePaddle's OOM wording, Ray's node start timing out
        ("aaa-paddleocr-gunicorn-workers-gpu0-oom", "Fail", "cuda_oom"),
        ("aab-ray-raylet-dashboard-agent-portfile-timeout", "Blocked", "ray_cluster"),
    ],
)
def test_round_aa_families_on_tuning_cases(tmp_path: Path, case: str, verdict: str, cls: str) -> None:
    assert primary(tri_text(tmp_path, tuning_case(case)))[:2] == (verdict, cls)


def test_near_misses_of_the_round_aa_families(tmp_path: Path) -> None:
    # the kernel's OOM killer is host memory, not the GPU
    text = "Out of memory: Killed process 12345 (python) total-vm:1234kB\n"
    assert primary(tri_text(tmp_path, text))[1] != "cuda_oom"
    # a Megatron module missing in a Ray actor stays the stack (bridge_import) when it is shallow
    text = "(MegatronPolicyWorker pid=7) ModuleNotFoundError: No module named 'megatron.bridge'\n"
    assert primary(tri_text(tmp_path, text))[1] == "bridge_import"
