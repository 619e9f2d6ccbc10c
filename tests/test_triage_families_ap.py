"""Triage added with corpus rounds ap and later (issue 12), on real excerpts (tuning cases of ``tests/corpus/``,
real fixtures) and against near misses that must not fire:

- a grad norm reported in a sentence ("WARNING: The grad norm is nan."), as ESPnet's trainers warn it, is read
  by the metric watch like any ``key: value`` report: two consecutive non-finite ones are a metric failure;
- SGLang's capture progress bar ("Capturing batches (bs=512 ...)") is CUDA-graph context, so a crash during it is a
  graph crash; torch.distributed's monitored barrier names the collective; a node waiting for the head's GCS;
  the Intel Fortran runtime's own Ctrl-C abort
  is a cancel; torchrun passing on SIGHUP (the terminal hung up) is a cancel with its own advice;
- round aq: a traceback that starts in ``__del__`` is one Python printed and ignored (also when the paste cut off
  its "Exception ignored in" header); rich's boxed traceback frames ("│ /x/y.py:498 in f │") are frames; a
  metric a logger formatted as a string ("'loss/train': 'nan'"); apex's loss scale halved below one in scientific
  notation; vLLM's Ray placement with no GPU on the driver node;
- round ar: SGLang's scheduler watchdog ("Watchdog timeout (self.watchdog_timeout=300)") is a hang;
- rounds as and at: older TensorFlow's op failures logged by op_kernel.cc at WARNING are errors, not warnings; the
  RAPIDS memory manager's "std::bad_alloc: out_of_memory"; PhysX's GPU pipeline failing to launch a kernel or with a
  CUDA error code; a glog CHECK on an NCCL call's result; glog's "*** Check failure stack trace ***" is a death;
  a file a library generated in the Windows temporary directory is no script a command names;
- a traceback cut before its exception line whose deepest frame is an import statement inside a function is an
  import that failed, as one at module level already was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console.triage.metricwatch import MetricWatch
from tests.triage_helpers import assert_no_finding, assert_primary, primary, tri, tri_text, tuning_case


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (
            "2021-04-23 19:22:52,420 (trainer:581) WARNING: The grad norm is nan. Skipping updating the model.",
            "nan",
        ),
        ("(asr:236) WARNING: grad norm is nan. Do not update model.", "nan"),
        ("grad_norm: 1.5.", "1.5"),
    ],
)
def test_a_grad_norm_in_a_sentence_is_read(line: str, want: str) -> None:
    _, pairs = MetricWatch(learn=False).read(line)
    assert pairs == [("grad_norm", want)]


def test_a_version_string_is_not_a_value() -> None:
    assert MetricWatch(learn=False).read("grad_norm: 1.2.3 is the version")[1] == []


def test_espnet_grad_norm_nan_warnings_are_a_metric_failure(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("aha-espnet1-loss-inf-grad-norm-nan-malach"))
    assert_primary(res, "Fail", "metric_failure", "metrics:grad_norm_nonfinite")


def test_one_nan_grad_norm_sentence_in_a_run_that_goes_on_is_not_a_failure(tmp_path: Path) -> None:
    text = (
        "(trainer:581) WARNING: The grad norm is nan. Skipping updating the model.\n"
        "(trainer:300) INFO: 1epoch:train:1-100batch: loss=85.3, grad_norm=40.1\n"
        "(trainer:300) INFO: 1epoch:train:101-200batch: loss=80.2, grad_norm=38.7\n"
    )
    assert_no_finding(tri_text(tmp_path, text))


# (tuning case, verdict, class, rule) of each family
TUNING_CASES = [
    (
        "apa-sglang-cutlass-dsl-abort-during-graph-capture",
        "Fail",
        "cuda_graph_crash",
        "fatal:fatal_signal+context:cuda_graph_near",
    ),
    (
        "apb-trl-grpo-vllm-broadcast-gloo-monitoredbarrier-timeout",
        "Fail",
        "nccl",
        "component:comp_collective",
    ),
    ("apb-kuberay-worker-pod-timed-out-waiting-for-gcs", "Blocked", "ray_cluster", "ray_gcs"),
    ("g-ray-tinyzero-ray-start-gcs-connect-timeout", "Blocked", "ray_cluster", "ray_gcs"),
    ("apg-mlagents-forrtl-control-c-abort", "Cancelled", "cancelled", "fortran_runtime_control_c"),
    ("m-ms-swift-torchrun-sighup-death-signal", "Cancelled", "cancelled", "terminal_hangup"),
    ("aqf-dpo-fsdp-train-stats-all-nan", "Fail", "metric_failure", "nan_inf_metric"),
    ("aqf-apex-amp-loss-scale-underflow-1e-110", "Fail", "metric_failure", "loss_scale_collapsing"),
    ("aqb-vllm-multinode-ray-no-gpu-on-driver-node-valueerror", "Blocked", "ray_cluster", "ray_resources"),
    ("ze-vllm-mp-engine-ray-no-gpu-on-driver-node", "Blocked", "ray_cluster", "ray_resources"),
    ("arc-sglang-dp-decode-hang-watchdog-timeout-pyspy-missing", "Fail", "hang", "sglang_scheduler_watchdog"),
    ("atd-tf-coriander-oom-allocating-4096x4096", "Fail", "cuda_oom", "cuda_oom"),
    (
        "afd-faster-rcnn-tf-restore-slice-variable-not-found",
        "Fail",
        "checkpoint_failure",
        "tf_key_not_in_checkpoint",
    ),
    ("atf-rapids-sagemaker-hpo-xgboost-rmm-bad-alloc", "Fail", "cuda_oom", "cuda_oom"),
    ("ata-isaaclab-physx-convexcore-kernel-fail-to-launch", "Fail", "cuda_error", "physx_gpu_cuda_failure"),
    ("asb-paddle-ncclgroupend-check-failed-mid-training", "Fail", "nccl", "nccl_error"),
    ("abb-caffe-nccl-check-failed-invalid-data-type", "Fail", "nccl", "nccl_error"),
]

REAL_FIXTURES = [
    ("fortran_runtime_ctrl_c_mlagents", "Cancelled", "cancelled", "fortran_runtime_control_c"),
    ("torchrun_sighup_rrhf", "Cancelled", "cancelled", "terminal_hangup"),
    ("sglang_scheduler_watchdog_tp8", "Fail", "hang", "sglang_scheduler_watchdog"),
    ("physx_narrowphase_cuda_700", "Fail", "cuda_error", "physx_gpu_cuda_failure"),
]

NEAR_MISSES = [
    # a hang-up named in prose, not a signal the launcher received
    "If the terminal closes, torchrun may receive SIGHUP; run it under tmux.",
    # a capture that finished, then a healthy server
    "Capturing batches (bs=1 avail_mem=1.72 GB): 100%|██████████| 4/4 [00:18<00:00,  4.57s/it]",
    # a string-formatted metric that is finite, and a loss scale that settled
    "train stats: {'loss/train': '0.6931', 'rewards_train/margins': '0.01'}",
    "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 32768.0",
    # PhysX's own API warnings are no CUDA failure
    "[Error] [omni.physx.plugin] PhysX error: PxArticulationLink::setGlobalPose(): it is illegal to call this method",
    # a CHECK on an NCCL call that held
    "I0101 00:00:00.0 1 nccl_helper.h:62] ncclGroupEnd() == ncclSuccess (0 vs. 0) ok",
    # prose about the Fortran runtime, no abort
    "Setting FOR_DISABLE_CONSOLE_CTRL_HANDLER=1 keeps the Fortran runtime from handling control-C.",
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


def test_a_hang_up_is_told_apart_from_a_user_cancel(tmp_path: Path) -> None:
    hup = tri_text(tmp_path, tuning_case("apg-rrhf-fsdp-single-gpu-sighup"))
    assert_primary(hup, "Cancelled", "cancelled", "terminal_hangup")
    assert "detached" in hup["primary"]["advice"]
    text = "torch.distributed.elastic.multiprocessing.api.SignalException: Process 12 got signal: 2\n"
    assert_primary(tri_text(tmp_path, text), "Cancelled", "cancelled", "user_interrupt")
    # a signal 11 is a crash, not a cancel
    crash = "torch.distributed.elastic.multiprocessing.api.SignalException: Process 12 got signal: 11\n"
    assert primary(tri_text(tmp_path, crash))[0] == "Fail"


def test_a_crash_long_after_sglang_capture_is_not_a_graph_crash(tmp_path: Path) -> None:
    capture = "Capturing batches (bs=8 avail_mem=60.05 GB): 100%|██████████| 3/3 [00:01<00:00,  2.1it/s]\n"
    serving = "".join(
        f"[2025-08-08 03:40:{i % 60:02d}] Decode batch. #running-req: 4, #token: {i}\n" for i in range(60)
    )
    crash = "Fatal Python error: Aborted\n"
    res = tri_text(tmp_path, capture + serving + crash)
    assert res["primary"]["class"] != "cuda_graph_crash"


def test_a_traceback_that_starts_in_a_finalizer_was_ignored(tmp_path: Path) -> None:
    # the cut-off paste of asyncio finalizers failing at interpreter exit (the run returned its result)
    assert_no_finding(tri_text(tmp_path, tuning_case("aqg-mcp-use-asyncio-del-exceptions-result-returned")))
    cut = (
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.10/site-packages/gymnasium/vector/vector_env.py", line 330, in __del__\n'
        '  File "/env/lib/python3.10/site-packages/mani_skill/envs/sapien_env.py", line 1123, in _clear\n'
        "TypeError: 'NoneType' object is not callable\n"
    )
    assert_no_finding(tri_text(tmp_path, cut))
    # the same error raised by a normal call is a crash
    called = cut.replace("line 330, in __del__", "line 330, in step")
    assert_primary(tri_text(tmp_path, called), "Fail", "unknown_error")


RICH_TRACEBACK = """\
╭───────────────────── Traceback (most recent call last) ──────────────────────╮
│ /data1/llm_rlhf/ilql_rlhf/zero_to_fp32.py:498 in get_fp32_state_dict_from_zero_checkpoint    │
│                                                                                              │
│ ❱ 498 │   │   │   raise ValueError(f"Unable to find 'latest' file at {latest_path}")         │
╰──────────────────────────────────────────────────────────────────────────────╯
ValueError: Unable to find 'latest' file
"""


def test_rich_boxed_traceback_frames_are_read(tmp_path: Path) -> None:
    assert_primary(tri_text(tmp_path, RICH_TRACEBACK), "Fail", "checkpoint_failure", "frames_checkpoint")
    # the same box around a user script's frame: a plain crash
    plain = RICH_TRACEBACK.replace(
        "zero_to_fp32.py:498 in get_fp32_state_dict_from_zero_checkpoint", "train.py:12 in main"
    )
    assert_primary(tri_text(tmp_path, plain), "Fail", "unknown_error")


def test_sglang_watchdog_settings_echoed_at_start_up_are_no_timeout(tmp_path: Path) -> None:
    text = "server_args=ServerArgs(model_path='Qwen/Qwen2-7B', watchdog_timeout=300, tp_size=8)\n"
    assert "sglang_scheduler_watchdog" not in {f["rule"] for f in tri_text(tmp_path, text)["findings"]}


def test_a_glog_check_failure_banner_is_a_death(tmp_path: Path) -> None:
    text = "F0101 00:00:00.000 17 foo.cc:12] Check failed: x == y (1 vs. 0)\n*** Check failure stack trace: ***\n"
    assert_primary(tri_text(tmp_path, text), "Fail", "unknown_error", "fatal:fatal_glog_check_failure")


def test_autograph_temp_file_cause_is_no_missing_script(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("asf-memilio-keras-fit-autograph-errno2-warning-tests"))
    assert_no_finding(res)
    # a script the command names is still one, wherever it lives
    text = "python: can't open file '/home/me/project/train_ppo.py': [Errno 2] No such file or directory\n"
    assert primary(tri_text(tmp_path, text))[1] == "catalog_drift"


CUT_IN_FUNCTION_IMPORT = """\
Traceback (most recent call last):
  File "/work/train.py", line 40, in <module>
    model = build_model(cfg)
  File "/env/lib/python3.10/site-packages/exllamav2/attn.py", line 23, in _lazy_init
    import flash_attn_2_cuda as flash_attn_cuda
"""


def test_a_traceback_cut_at_an_import_inside_a_function_is_an_import_failure(tmp_path: Path) -> None:
    res = tri_text(tmp_path, CUT_IN_FUNCTION_IMPORT)
    assert_primary(res, "Blocked", "missing_dependency", "frames_cut_in_import_chain")
    # cut at a call that is no import: nothing says which failure it was
    call = CUT_IN_FUNCTION_IMPORT.replace(
        "import flash_attn_2_cuda as flash_attn_cuda", "return flash_attn_cuda.fwd(q, k)"
    )
    assert primary(tri_text(tmp_path, call))[2] != "frames_cut_in_import_chain"
