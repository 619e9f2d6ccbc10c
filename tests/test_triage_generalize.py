"""Triage mechanisms that decide from structure and catalog data, not from one literal per case
(issue 12, Build 2), on lines as they are printed by the libraries and pasted in public threads.

Each excerpt is a real line (its source is cited next to it); the few composed ones put real lines
into Python's own traceback format and say so. None comes from a held-out corpus case.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console.triage.scan import triage_files

pytestmark = pytest.mark.timeout(60)

REAL = Path(__file__).parent / "fixtures" / "triage" / "real"


def tri(tmp_path: Path, text: str, exit_code: int | None = None) -> dict:
    path = tmp_path / "case.log"
    path.write_text(text.strip("\n") + "\n")
    return triage_files([path], exit_code=exit_code)


def classes(res: dict) -> list[str]:
    return [a["class"] for a in res.get("alternatives") or []]


# --- the exception's type and message name the class (catalog [[exception]] entries) -------------


@pytest.mark.parametrize(
    ("line", "cls", "rule", "also"),
    [
        # gloo's collective timeout (verl-project/verl#2106, "Timed out waiting 1800000ms for recv operation")
        (
            "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
            "1800000ms for recv operation to complete",
            "nccl",
            "exc_timeout_collective",
            "hang",
        ),
        # torch.load of a truncated checkpoint (PyTorch's own message)
        (
            "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory",
            "checkpoint_failure",
            "exc_checkpoint_read",
            None,
        ),
        # a package at another version than its caller (NVIDIA/TransformerEngine#1014, NVIDIA/Megatron-LM#696)
        (
            "AttributeError: module 'transformer_engine' has no attribute 'pytorch'",
            "missing_dependency",
            "exc_module_lacks_attribute",
            "container_venv_mismatch",
        ),
        # a call the installed library does not accept (ray-project/ray#1181: cloudpickle versions differ)
        (
            "TypeError: _fill_function() missing 1 required positional argument: 'closure_values'",
            "config_error",
            "exc_signature_mismatch",
            "container_venv_mismatch",
        ),
    ],
)
def test_exception_type_and_message_name_the_class(
    tmp_path: Path, line: str, cls: str, rule: str, also: str | None
) -> None:
    res = tri(tmp_path, line)
    primary = res["primary"]
    assert primary["class"] == cls and primary["rule"] == rule, primary
    assert res["verdict"] != "Incomplete"  # an uncaught exception line is fatal
    if also:
        assert also in classes(res)  # "likely X; also consistent with Y"


def test_missing_file_is_named_by_the_kind_of_path(tmp_path: Path) -> None:
    # tuning case ckpt-nemorl-rerun-same-checkpoint-dir-weights-model-missing (NVIDIA-NeMo/RL): a step_N/
    # checkpoint directory
    res = tri(
        tmp_path,
        "FileNotFoundError: Failed to load model from '/storage/nemo_rl_2/step_2/policy/weights/model': Model path "
        "/storage/nemo_rl_2/step_2/policy/weights/model does not exist",
    )
    assert res["primary"]["class"] == "checkpoint_failure", res["primary"]


def test_wrapped_exception_cut_before_its_message_gives_its_likeliest_class_and_the_others() -> None:
    # verl-project/verl#1763: only `RayTaskError(FileNotFoundError)` was pasted, the message was cut
    res = triage_files([REAL / "ray_task_file_not_found_cut.log"])
    primary = res["primary"]
    assert (res["verdict"], primary["class"], primary["rule"]) == (
        "Blocked",
        "data_missing",
        "exc_missing_file",
    )
    assert primary["confidence"] < 0.5  # a guess from the type alone
    assert {"hf_offline_missing", "checkpoint_failure"} <= set(classes(res))


def test_frames_decide_before_a_type_only_guess() -> None:
    # ray-project/ray#33851: a FileNotFoundError raised by Ray Data's path expansion (frames after the wrapper)
    res = triage_files([REAL / "ray_data_read_file_not_found.log"])
    assert res["primary"]["class"] == "data_missing"


def test_bare_assert_is_read_from_the_asserted_statement(tmp_path: Path) -> None:
    # composed: verl's own assert (verl/workers/fsdp_workers.py) in Python's traceback format, as a Ray task
    # raises it; the asserted statement on batch sizes of the config is the only message there is
    text = """
ray.exceptions.RayTaskError(AssertionError): ray::WorkerDict.actor_rollout_init_model() (pid=1234, ip=10.0.0.1)
  File "/workspace/verl/verl/workers/fsdp_workers.py", line 138, in __init__
    assert self.config.actor.ppo_mini_batch_size % self.config.actor.ppo_micro_batch_size_per_gpu == 0
AssertionError
"""
    res = tri(tmp_path, text)
    assert res["primary"]["class"] == "config_error" and res["primary"]["rule"] == "exc_config_assert"


# --- log levels of the C++ parts ------------------------------------------------------------------


def test_glog_error_level_line_names_its_component(tmp_path: Path) -> None:
    # c10d's server-socket failure as printed with PyTorch's glog prefix (a line no rule names; the TCPStore
    # connect timeout that stood here now has its own family rule, c10d_store_connect_timeout)
    res = tri(
        tmp_path,
        "[E socket.cpp:462] [c10d] The server socket has failed to listen on any local network address.",
    )
    assert res["primary"]["class"] == "nccl" and res["primary"]["rule"] == "component:comp_collective"
    # the same library at warning level is not a failure
    res = tri(
        tmp_path,
        "[W728 15:01:59.562622567 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
        "127.0.0.1:48315 - retrying (try=0, timeout=600000ms, delay=66415ms)",
    )
    assert res["primary"] is None


def test_nccl_info_plugin_line_is_not_a_missing_library(tmp_path: Path) -> None:
    # NVIDIA/nccl#1160: NCCL_DEBUG=INFO prints this on healthy runs (no external net plugin installed)
    res = tri(
        tmp_path,
        "g3-xlarge-x86-dal-1:3183:3183 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : "
        "libnccl-net.so: cannot open shared object file: No such file or directory\n"
        "g3-xlarge-x86-dal-1:3183:3183 [0] NCCL INFO NET/Plugin : No plugin found, using internal implementation",
    )
    assert res["primary"] is None and res["verdict"] == "Incomplete"


def test_kernel_assert_is_a_cuda_fault(tmp_path: Path) -> None:
    # PyTorch's device-side index assert, printed by the kernel before "CUDA error: device-side assert triggered"
    res = tri(
        tmp_path,
        "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] "
        'Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.',
    )
    assert res["primary"]["class"] == "cuda_error"


# --- silent hangs -----------------------------------------------------------------------------------


def test_a_hang_report_counts_only_when_the_run_did_not_complete(tmp_path: Path) -> None:
    stuck = (REAL / "hang_nccl_watchdog_stuck.log").read_text()
    assert tri(tmp_path, stuck)["primary"]["class"] == "hang"
    # composed: the same watchdog line, then verl's completion line: a slow phase, not a hang
    res = tri(
        tmp_path, stuck + "(TaskRunner pid=1) Final validation metrics: {'val-core/gsm8k/reward/mean@1': 0.7}"
    )
    assert res["verdict"] == "Pass" and res["primary"] is None


def test_a_py_spy_dump_is_a_hang() -> None:
    for name in ("hang_py_spy_dump_rollout", "hang_py_spy_dump_engine"):
        res = triage_files([REAL / f"{name}.log"])
        assert (res["verdict"], res["primary"]["rule"]) == ("Fail", "stack_dump_of_live_process"), name


# --- Ray's own wording -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("ray_node_marked_dead", "ray_node_dead"),
        ("ray_actor_cannot_be_scheduled", "ray_resources_pending"),
        ("ray_status_pending_demands", "ray_resources_pending"),
    ],
)
def test_ray_cluster_wording(name: str, rule: str) -> None:
    res = triage_files([REAL / f"{name}.log"])
    assert (res["primary"]["class"], res["primary"]["rule"]) == ("ray_cluster", rule)


def test_pending_resources_in_a_completed_run_are_noise(tmp_path: Path) -> None:
    pending = (REAL / "ray_actor_cannot_be_scheduled.log").read_text()
    res = tri(
        tmp_path,
        pending + "(TaskRunner pid=1) Final validation metrics: {'val-core/gsm8k/reward/mean@1': 0.7}",
    )
    assert res["verdict"] == "Pass"


def test_worker_that_cannot_unpickle_is_a_venv_mismatch() -> None:
    # ray-project/ray#7881: the worker's Python 2.7 env cannot unpickle what the driver sent
    res = triage_files([REAL / "ray_worker_unpickle_remote_function.log"])
    assert res["primary"]["class"] == "container_venv_mismatch"


# --- user cancel --------------------------------------------------------------------------------------


def test_torchelastic_sigterm_and_slurm_scancel_are_cancels(tmp_path: Path) -> None:
    # torchelastic's agent line (Signals.SIGTERM form) and Slurm's cancel banner with no "DUE TO ..." reason
    for line in (
        "W0501 10:00:00.000000 1234 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGTERM "
        "death signal, shutting down workers",
        "slurmstepd: error: *** STEP 1234.0 ON node1 CANCELLED AT 2024-05-01T10:00:00 ***",
    ):
        assert tri(tmp_path, line)["verdict"] == "Cancelled", line
    res = tri(
        tmp_path,
        "slurmstepd: error: *** JOB 1234 ON node1 CANCELLED AT 2024-05-01T10:00:00 DUE TO TIME LIMIT ***",
    )
    assert res["primary"]["class"] == "hang"


# --- metric anomalies and the Hub's wording -----------------------------------------------------------


def test_hf_trainer_dict_with_nan_grad_norm_on_consecutive_logs_is_a_metric_failure(tmp_path: Path) -> None:
    # the HF Trainer's log dicts as pasted in public bug notes (cuDNN SDPA backward producing NaN grads)
    res = tri(
        tmp_path,
        "{'loss': 80.8002, 'grad_norm': nan, 'learning_rate': 2.9411764705882354e-05, 'epoch': 0.18}\n"
        "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 4.995131923687488e-05, 'epoch': 0.36}",
    )
    assert (res["primary"]["class"], res["primary"]["rule"]) == (
        "metric_failure",
        "metrics:grad_norm_nonfinite",
    )
    # one NaN report alone is what fp16 loss scaling does routinely: not a failure
    res = tri(
        tmp_path,
        "{'loss': 80.8002, 'grad_norm': nan, 'learning_rate': 2.9411764705882354e-05, 'epoch': 0.18}",
    )
    assert res["primary"] is None


@pytest.mark.parametrize(
    ("line", "cls"),
    [
        # huggingface_hub's validator and the datasets library (their own messages)
        (
            "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
            "'namespace/repo_name': '/models/Qwen2.5-7B-Instruct/'. Use `repo_type` argument if needed.",
            "hf_offline_missing",
        ),
        (
            "datasets.exceptions.DatasetNotFoundError: Dataset 'openai/gsm8k' doesn't exist on the Hub or cannot "
            "be accessed.",
            "data_missing",
        ),
    ],
)
def test_hub_and_datasets_not_found_wording(tmp_path: Path, line: str, cls: str) -> None:
    assert tri(tmp_path, line)["primary"]["class"] == cls


# --- who printed it: the process prefix and the C++ log levels (tuning cases of cases-d.jsonl) -------


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        # ray-raylet-crash-resource-instance-set-check-failed (ray-project/ray#50433): a fatal check in "(raylet)"
        (
            "(raylet) [2025-02-11 18:42:15,859 C 30797 30797] resource_instance_set.cc:374:  Check failed: "
            "RAY_PREDICT_TRUE(_left_ >= _right_)  0 vs 10000",
            "ray_cluster",
        ),
        # ray-test-dead-actors-raylet-node-disconnected-check-failure (ray-project/ray#9875): glog F-level, raylet
        (
            "(pid=raylet, ip=172.31.21.113) F0803 17:57:59.534689 31315 31315 service_based_accessor.cc:488]  Check "
            "failed: !local_node_id_.IsNil() This node is disconnected.",
            "ray_cluster",
        ),
        # ray-node-exit-raylet-socket-connect-fatal-whole-cluster-died (ray-project/ray#7788): unbracketed glog
        (
            "F0328 18:49:23.675355 81818 raylet_client.cc:83] Could not connect to socket "
            "/tmp/ray/session_2020-03-28_18-07-49_270759_76175/sockets/raylet",
            "ray_cluster",
        ),
        # nccl-tests-unhandled-system-error-docker-shm-ipc-host (NVIDIA/nccl#473): nccl-tests' own failure line
        ("fastmoe: Test NCCL failure common.cu:777 'unhandled system error'", "nccl"),
        # venv-logic-rl-ray-2120-cluster-vs-2420-process style: Ray refuses another Ray/Python than the cluster's
        (
            "RuntimeError: Version mismatch: The cluster was started with:\n    Ray: 2.12.0\n    Python: 3.10.14\n"
            "This process on node 10.0.0.1 was started with:\n    Ray: 2.42.0\n    Python: 3.10.14",
            "container_venv_mismatch",
        ),
        # rocr-lumi-vllm-apiserver-please-use-hip-visible-devices: Ray's own refusal on AMD nodes
        (
            "(APIServer pid=115369) RuntimeError: Please use HIP_VISIBLE_DEVICES instead of ROCR_VISIBLE_DEVICES",
            "rocr_visible_devices",
        ),
        # bridge-accelerate-megatron-get-args-unknown-location: "unknown location" = a namespace package, the
        # real Megatron package is not installed: the Megatron stack itself is missing (bridge_import)
        (
            "ImportError: cannot import name 'get_args' from 'megatron' (unknown location)",
            "bridge_import",
        ),
    ],
)
def test_process_prefix_and_log_level_name_the_area(tmp_path: Path, text: str, cls: str) -> None:
    assert tri(tmp_path, text)["primary"]["class"] == cls


def test_a_library_warning_about_an_optional_driver_is_not_a_missing_library(tmp_path: Path) -> None:
    # pass-nccl-tests-e810-roce-passed-with-ibverbs-openmpi-warnings (NVIDIA/nccl#622): the test then passed
    res = tri(
        tmp_path,
        "libibverbs: Warning: couldn't load driver 'libi40iw-rdmav34.so': libi40iw-rdmav34.so: cannot open "
        "shared object file: No such file or directory",
    )
    assert res["primary"] is None


@pytest.mark.parametrize(
    "line",
    [
        # ckpt-bridge-qwen3-moe-mcore013-cannot-unpickle-mcoremetadata: a checkpoint pickled by a newer Megatron Core
        "AttributeError: Can't get attribute 'MCoreMetadata' on <module "
        "'megatron.core.dist_checkpointing.strategies.torch'>",
        # ckpt-bridge-nemotron3-super-nvfp4-import-shape-mismatch: a weight that does not fit the model on import
        "ValueError: Shape mismatch for megatron param decoder.layers.1.mlp.shared_experts.linear_fc2.weight:",
    ],
)
def test_a_checkpoint_that_does_not_load_back(tmp_path: Path, line: str) -> None:
    assert tri(tmp_path, line)["primary"]["class"] == "checkpoint_failure"


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        # vLLM's and SGLang's own messages for a KV cache that does not fit
        (
            "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
            "stored in KV cache (12345). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.",
            "cuda_oom",
        ),
        ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "cuda_oom"),
        # uv's and pip's own messages for a wheel that does not build or requirements that do not resolve
        (
            "  × Failed to build `flash-attn==2.7.4.post1`\n  ├─▶ The build backend returned an error",
            "missing_dependency",
        ),
        ("  × No solution found when resolving dependencies:", "missing_dependency"),
        (
            "ERROR: Could not build wheels for flash-attn, which is required to install pyproject.toml-based projects",
            "missing_dependency",
        ),
        # transformers older than the model's tokenizer (not a missing model file)
        (
            "ValueError: Tokenizer class Qwen2Tokenizer does not exist or is not currently imported.",
            "missing_dependency",
        ),
    ],
)
def test_library_wording_for_memory_and_installs(tmp_path: Path, text: str, cls: str) -> None:
    assert tri(tmp_path, text)["primary"]["class"] == cls


def test_pip_resolver_notice_in_a_setup_is_not_a_failure(tmp_path: Path) -> None:
    res = tri(
        tmp_path,
        "ERROR: pip's dependency resolver does not currently take into account all the packages that are "
        "installed. This behaviour is the source of the following dependency conflicts.\n"
        "vllm 0.8.5 requires torch==2.6.0, but you have torch 2.7.0 which is incompatible.\n"
        "Successfully installed torch-2.7.0",
    )
    assert res["primary"] is None


@pytest.mark.parametrize(
    "line",
    [
        "Killed",  # bash, for a child SIGKILLed (the kernel's OOM killer, usually)
        "srun: error: node001: task 0: Killed",  # Slurm's srun, same death
        "slurmstepd: error: Detected 1 oom_kill event in StepId=123.0. Some of the step tasks have been OOM Killed.",
    ],
)
def test_a_killed_process_is_in_the_fatal_tier(tmp_path: Path, line: str) -> None:
    res = tri(tmp_path, "iteration       10/     100 | lm loss: 2.1 |\n" + line)
    assert res["verdict"] == "Fail" and res["primary"]["class"] == "unknown_error"
    assert "dmesg" in res["primary"]["advice"]  # generic next steps for a signal death


@pytest.mark.parametrize(
    ("line", "cls"),
    [
        # subprocess's own message for a program that is not installed (DeepSpeed's JIT ops, a ninja build)
        (
            "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'",
            "missing_dependency",
        ),
        ("FileNotFoundError: [Errno 2] No such file or directory: 'ninja'", "missing_dependency"),
        # the same exception on a data file
        (
            "FileNotFoundError: [Errno 2] No such file or directory: '/data/gsm8k/train.parquet'",
            "data_missing",
        ),
    ],
)
def test_missing_program_or_data_by_the_path(tmp_path: Path, line: str, cls: str) -> None:
    assert tri(tmp_path, line)["primary"]["class"] == cls


@pytest.mark.parametrize(
    ("line", "verdict"),
    [
        # torchelastic's agent re-raises the signal it got: 2 (SIGINT) is a user stop, 11 (SIGSEGV) a crash
        (
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4012 got signal: 2",
            "Cancelled",
        ),
        (
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4012 got signal: 11",
            "Fail",
        ),
        # Ray's own type for a task stopped with ray.cancel
        (
            "ray.exceptions.TaskCancelledError: Task: TaskID(16310a0f0a45af5cffffffffffffffffffffffff01000000) "
            "was cancelled.",
            "Cancelled",
        ),
    ],
)
def test_signal_and_task_cancel_wording(tmp_path: Path, line: str, verdict: str) -> None:
    assert tri(tmp_path, line)["verdict"] == verdict


@pytest.mark.parametrize(
    ("line", "cls"),
    [
        # PyTorch's sampler on an empty dataset, verl's dataloader size line (hang-verl-no-errors-... shows
        # the healthy form, "Size of train dataloader: 1136")
        ("ValueError: num_samples should be a positive integer value, but got num_samples=0", "data_missing"),
        ("(TaskRunner pid=92717) Size of train dataloader: 0, Size of val dataloader: 1", "data_missing"),
        ("(TaskRunner pid=92717) Size of train dataloader: 1136, Size of val dataloader: 1", None),
    ],
)
def test_an_empty_dataset_is_data_missing(tmp_path: Path, line: str, cls: str | None) -> None:
    assert (tri(tmp_path, line)["primary"] or {}).get("class") == cls


def test_retries_given_up_on_429_are_a_rate_limit(tmp_path: Path) -> None:
    # urllib3's own message once its retries on 429 responses are exhausted (not a retry that went on)
    line = (
        "requests.exceptions.RetryError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded "
        "with url: /api/models/Qwen/Qwen2.5-7B-Instruct (Caused by ResponseError('too many 429 error responses'))"
    )
    res = tri(tmp_path, line)
    assert (res["verdict"], res["primary"]["class"]) == ("Blocked", "hf_rate_limit")
