"""Triage added with corpus rounds af to aj (issue 12), on real excerpts (tuning cases of ``tests/corpus/``, real
fixtures) and against near misses that must not fire. Round af:

- an exception line quoted as inline code in an issue's prose (```RuntimeError: ...```) is read as the exception
  line it quotes, so the exception table names it; prose that merely quotes a type name is not;
- "unsupported pickle protocol: 5" is a client and its workers on different Pythons;
- an exception whose own line is shutdown noise (TensorFlow's feeder thread cancelled when the session closes)
  makes its traceback noise, and so does an exception raised while handling it; a real error stays one;
- NCCL 1.x's "WARN src/reduce.cu:126 Cuda failure '...'", pkg_resources' DistributionNotFound, Ray before 2.0
  failing to reach its Redis, TensorFlow 1.0's "Tensor name ... not found in checkpoint files";
- round ag: PySpark's worker/driver Python check, vLLM's unresolvable model id (also inside pydantic's
  ModelConfig validation, whose own header now yields to the cause it wraps), TensorFlow's check_numerics
  ("contains inf or nan"), an engine refusing to start for "insufficient GPU memory", huggingface_hub 1.x's
  httpx 401 on a huggingface.co URL; two exception entries on real fixtures of other threads;
- round ah: the old "cached path" wording of an offline Hub, NumPy 2's ABI banner (transient), torch.load's
  weights_only refusal;
- round ai: the loader's "symbol ... version ... not defined ... with link time reference", Windows' "Error loading
  ...dll or one of its dependencies", a runtime's own "Graph capture failed" as CUDA-graph context;
- round aj: Ascend NPU graph capture failures, autograd anomaly at the graph root, vLLM's /dev/shm check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import assert_no_finding, assert_primary, tri, tri_text, tuning_case


def test_exception_quoted_as_inline_code_is_read(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("tc-dddd-trainer-resume-truncated-ckpt-after-disk-full"))
    assert_primary(res, "Fail", "checkpoint_failure", "exc_checkpoint_read")
    assert res["primary"]["line"] == 1


def test_inline_code_that_names_a_type_in_prose_is_not_an_exception(tmp_path: Path) -> None:
    text = "I tried `RuntimeError` handling around `torch.load` but nothing changed.\nstep 3/10 done\n"
    assert_no_finding(tri_text(tmp_path, text))


def test_pickle_protocol_in_a_ray_worker_log_line(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("acc-ray-runtime-env-dev-mode-worker-unsupported-pickle-protocol-5"))
    assert_primary(res, "Blocked", "container_venv_mismatch", "pickle_protocol_newer_than_reader")


@pytest.mark.parametrize(
    "case",
    [
        "aff-pass-deeplabcut-enqueue-cancelled-after-training",
        "yf-deeplabcut-enqueue-cancelled-after-last-iteration",
    ],
)
def test_tf_feeder_thread_cancelled_at_session_close_is_noise(tmp_path: Path, case: str) -> None:
    res = tri_text(tmp_path, tuning_case(case))
    assert_no_finding(res)
    assert [f["rule"] for f in res["findings"]] == ["noise_tf_queue_enqueue_cancelled"]


def test_tf_feeder_noise_on_real_fixture() -> None:
    assert_no_finding(tri("tf_queue_enqueue_cancelled_after_training"))


NOISE_THEN_REAL = """\
Exception in thread Thread-1:
Traceback (most recent call last):
  File "session.py", line 1365, in _do_call
    return fn(*args)
tensorflow.python.framework.errors_impl.CancelledError: Enqueue operation was cancelled
Traceback (most recent call last):
  File "train.py", line 10, in <module>
    main()
RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB
"""

REAL_THEN_CHAINED = """\
Traceback (most recent call last):
  File "train.py", line 10, in <module>
    step()
ValueError: bad batch

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "train.py", line 12, in <module>
    save()
"""


def test_a_real_error_after_noise_is_still_the_cause(tmp_path: Path) -> None:
    assert_primary(tri_text(tmp_path, NOISE_THEN_REAL), "Fail", "cuda_oom")


def test_a_chain_after_a_real_error_is_not_noise(tmp_path: Path) -> None:
    res = tri_text(tmp_path, REAL_THEN_CHAINED)
    assert_primary(res, "Fail", "unknown_error")
    assert "ValueError: bad batch" in res["primary"]["evidence"]


def test_vllm_unresolvable_model_id_inside_pydantic_validation(tmp_path: Path) -> None:
    """The error pydantic wraps names the cause; the validation header alone is the config's fallback."""
    res = tri_text(tmp_path, tuning_case("age-vllm-colab-pydantic-invalid-repo-finetuned-model"))
    assert_primary(res, "Blocked", "hf_offline_missing", "hf_gated")
    assert "config_error" in {a["class"] for a in res["alternatives"]}


NUMPY2_BANNER_THEN_TRAINING = """\
A module that was compiled using NumPy 1.x cannot be run in
NumPy 2.0.0 as it may crash. To support both 1.x and 2.x
versions of NumPy, modules must be compiled with NumPy 2.0.
step 1/10 loss: 2.31
step 2/10 loss: 2.20
"""


def test_numpy2_banner_alone_in_a_run_that_goes_on_is_soft(tmp_path: Path) -> None:
    res = tri_text(tmp_path, NUMPY2_BANNER_THEN_TRAINING)
    assert_no_finding(res)
    assert [f["rule"] for f in res["findings"]] == ["numpy2_abi_module_compiled_for_1x"]


# (tuning case, verdict, class, rule) of each family, rounds af to aj
TUNING_CASES = [
    ("afb-mxnet-nccl1-kvstore-reduce-invalid-resource-handle", "Fail", "nccl", "nccl_error"),
    ("acb-pytorch-thd-datachannel-nccl-cuda-oom-internal", "Fail", "nccl", "nccl_error"),
    (
        "afc-dask-worker-image-msgpack-distribution-not-found",
        "Blocked",
        "missing_dependency",
        "exc_package_not_found",
    ),
    ("afb-ray101-raylet-redis-random-port-context-err", "Blocked", "ray_cluster", "ray_gcs"),
    ("afb-modin-import-redis-error60-operation-timed-out", "Blocked", "ray_cluster", "ray_gcs"),
    (
        "afd-faster-rcnn-tf-restore-slice-variable-not-found",
        "Fail",
        "checkpoint_failure",
        "tf_key_not_in_checkpoint",
    ),
    (
        "agc-docker-spark-submit-worker-python35-driver37",
        "Blocked",
        "container_venv_mismatch",
        "pyspark_worker_python_differs",
    ),
    (
        "agc-dataproc-conda-upgraded-master-python-not-workers",
        "Blocked",
        "container_venv_mismatch",
        "pyspark_worker_python_differs",
    ),
    ("age-vllm-omni-apiserver-invalid-repo-id-qwen-image-edit", "Blocked", "hf_offline_missing", "hf_gated"),
    ("age-tensorforce-dqn-invalid-gradient-checknumerics", "Fail", "metric_failure", "nan_inf_metric"),
    ("aga-oom-trtllm-executor-kv-cache-tp8", "Fail", "cuda_oom", "cuda_oom"),
    ("afe-peft-private-adapter-httpx-401", "Blocked", "hf_offline_missing", "hf_http_auth_status"),
    (
        "ahe-hf-transformersum-offline-connection-error-cached-path",
        "Blocked",
        "hf_offline_missing",
        "hf_local_entry_missing",
    ),
    (
        "ahc-draggan-docker-numpy2-abi-compiled-module",
        "Blocked",
        "missing_dependency",
        "numpy2_abi_module_compiled_for_1x",
    ),
    (
        "zf-atrain-numpy2-compiled-module-and-np-nan",
        "Blocked",
        "missing_dependency",
        "exc_removed_in_release",  # the NumPy 2 banner is transient: the removed np.NaN names it
    ),
    (
        "ahd-open-instruct-resume-load-state-weights-only",
        "Fail",
        "checkpoint_failure",
        "torch_load_weights_only_refused",
    ),
    (
        "ua-swift-resume-weights-only-losscaler",
        "Fail",
        "checkpoint_failure",
        "torch_load_weights_only_refused",
    ),
    (
        "aic-onnxruntime-gpu-ld-preload-libcublaslt-symbol-version",
        "Blocked",
        "missing_dependency",
        "shared_library_symbol_version_mismatch",
    ),
    (
        "aic-materialsearch-windows-torch-fbgemm-dll-winerror126",
        "Blocked",
        "missing_dependency",
        "windows_dll_load_failed",
    ),
    ("aie-realizar-graph-capture-901-driver", "Fail", "cuda_graph_crash", "cuda_fault+context:cuda_graph"),
    ("ajb-metric-torchdiffeq-adjoint-graphroot-nan", "Fail", "metric_failure", "autograd_anomaly_nonfinite"),
    ("ajd-xpu-ci-vllm-insufficient-dev-shm-runner", "Blocked", "no_space", "shm_exhausted"),
    ("aje-xllm-acl-graph-capture-end-cleanup-failed", "Fail", "cuda_graph_crash", "npu_graph_capture_failed"),
]

# (real fixture, verdict, class, rule): fixtures from other public threads or built from tuning cases
REAL_FIXTURES = [
    (
        "pickle_protocol_dask_worker",
        "Blocked",
        "container_venv_mismatch",
        "pickle_protocol_newer_than_reader",
    ),
    ("torch_load_checkpoint_file_missing", "Fail", "checkpoint_failure", "exc_missing_checkpoint_file"),
    ("hf_validation_error_repo_id_space", "Blocked", "hf_offline_missing", "exc_module_hub"),
    (
        "pyspark_worker_python_differs_submit",
        "Blocked",
        "container_venv_mismatch",
        "pyspark_worker_python_differs",
    ),
    (
        "numpy2_abi_module_compiled_for_1x_docker",
        "Blocked",
        "missing_dependency",
        "numpy2_abi_module_compiled_for_1x",
    ),
    ("torch_load_weights_only_resume", "Fail", "checkpoint_failure", "torch_load_weights_only_refused"),
    (
        "cublas_symbol_version_colossalai",
        "Blocked",
        "missing_dependency",
        "shared_library_symbol_version_mismatch",
    ),
    (
        "cublas_symbol_version_cuml_import",
        "Blocked",
        "missing_dependency",
        "shared_library_symbol_version_mismatch",
    ),
    ("windows_torch_dll_load_failed_jupyter", "Blocked", "missing_dependency", "windows_dll_load_failed"),
    ("windows_torch_dll_load_failed_webui", "Blocked", "missing_dependency", "windows_dll_load_failed"),
    ("npu_graph_capture_end_vllm_ascend", "Fail", "cuda_graph_crash", "npu_graph_capture_failed"),
]

# lines of the same families that must not fire
NEAR_MISSES = [
    "INFO Connected to redis at 10.0.0.1:6379 (context.err = 0)",
    "Python 3.8 added pickle protocol 5; this run pickles with protocol 4",
    "init.cu:218 INFO using Cuda failure-tolerant path",
    "Tensor name list loaded from checkpoint files",
    "INFO Python in worker and driver: 3.10 (same version)",
    "[I] Model loaded; GPU memory is sufficient for the KV cache",
    "check_numerics: no inf or nan found in 120 tensors",
    "torch.load(path, weights_only=True) loaded 12 tensors",
    "INFO: compiled using NumPy 2.0; no rebuild needed",
    "Loaded tokenizer from the cached path /root/.cache/huggingface",
    "Loaded c10.dll and its dependencies in 0.2 s",
    "ldd: libcublas.so.11 => /usr/local/cuda/lib64/libcublas.so.11 (version libcublasLt.so.11 defined)",
    "torch.compile: graph capture took 12.3 s (dynamo)",
    "INFO [acl_graph.py:185] Replaying aclgraph",
    "INFO NPUGraph capture_end done for batch sizes [1, 2, 4, 8]",
    "/dev/shm: 64 MiB free (enough for this run)",
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
