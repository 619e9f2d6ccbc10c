"""Triage added with corpus rounds af to al (issue 12), on real excerpts (tuning cases of ``tests/corpus/``, real
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
- round aj: Ascend NPU graph capture failures, autograd anomaly at the graph root, vLLM's /dev/shm check;
- round ak: a module name quoted as inline code, pytest's collection header yielding to its "E   ImportError"
  line, a Jupyter kernel that cannot import ipykernel (another interpreter), TensorFlow 1's "Type (see above for
  traceback): msg" exception line, a bracketed "[Loss] nan", glog lines with padded thread ids, Ray's node-start
  timeout, diffusers' "model is not cached locally", a package's own "incompatible, please install X>=" check,
  PaddlePaddle's unconfigured third-party library and its old allocator check;
- round al: a line logged at glog's WARNING severity only warns (TensorFlow's dso_loader "Could not load dynamic
  library"), except TensorFlow's "OP_REQUIRES failed" op errors; a bare TensorFlow 1 exception line is read;
  TensorFlow's checkpoint reader (TensorSliceReader) names a checkpoint;
- round am: sgl-kernel's "Could not load any common_ops library", vLLM's required-GPUs check cut short, an NPU graph
  capture failing at its begin, SGLang's weight reload ending ("Update weights end", finished 100% bars) is no stall;
- rounds an and ao: transformers' lazy-import wrapper ("Failed to import X because of the following error"), NaN
  log-probs and logits of a preference trainer, NCCL's socket "message truncated" and "Duplicate GPU detected";
  a file cut short or not the archive it should be (h5py, tarfile, zipfile), data_missing as the alternative.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import REAL, assert_no_finding, assert_primary, primary, tri, tri_text, tuning_case


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
    ("abd-tgan-load-model-tarfile-unexpected-eof", "Fail", "checkpoint_failure", "exc_archive_truncated"),
    ("acd-maskrcnn-h5-truncated-file-eof", "Fail", "checkpoint_failure", "exc_archive_truncated"),
    ("ajb-ckpt-earth2studio-corrdiff-badzipfile", "Fail", "checkpoint_failure", "exc_archive_truncated"),
    (
        "ane-r1-finetune-torchvision-partially-initialized",
        "Blocked",
        "missing_dependency",
        "exc_lazy_import_failed",
    ),
    ("anb-trl-dpo-long-completion-logits-nan", "Fail", "metric_failure", "nan_inf_metric"),
    ("qb-trl-dpo-logits-nan-metrics", "Fail", "metric_failure", "nan_inf_metric"),
    ("and-nccl-socket-message-truncated-pytorch-multinode", "Fail", "nccl", "nccl_error"),
    ("aob-nemorl-dapo-dsv3-duplicate-gpu-warn", "Fail", "nccl", "nccl_error"),
    ("aka-nemo-colab-no-module-nemo-collections", "Blocked", "bridge_import", "import_bridge_stack"),
    (
        "aka-nemo-pytest-modelparallelconfig-mcore-020",
        "Blocked",
        "bridge_import",
        "import_name_from_bridge_stack",
    ),
    (
        "aka-jupyter-venv-kernel-homebrew-python35",
        "Blocked",
        "container_venv_mismatch",
        "import_launcher_module",
    ),
    ("akb-ssd-tf-restore-assign-shape-mismatch", "Fail", "checkpoint_failure", "component:comp_checkpoint"),
    (
        "aia-tf1-cosine-metric-datalosserror-not-sstable",
        "Fail",
        "checkpoint_failure",
        "component:comp_checkpoint",
    ),
    ("akb-lion-vae-loss-explodes-then-nan", "Fail", "metric_failure", "nan_inf_metric"),
    ("alc-tf-chatbot-tensorslicereader-not-found", "Fail", "checkpoint_failure", "component:comp_checkpoint"),
    (
        "aed-rexgen-tf-saver-restore-tensorslicereader-not-found",
        "Fail",
        "checkpoint_failure",
        "component:comp_checkpoint",
    ),
    ("abb-fastnn-tf1-nccl-communicator-unhandled-system", "Fail", "nccl", "nccl_error"),
    (
        "ame-sglang-sgl-kernel-common-ops-critical-load",
        "Blocked",
        "missing_dependency",
        "sgl_kernel_ops_not_loaded",
    ),
    ("amd-vllm-ray-two-nodes-required-gpus-exceed-cluster", "Blocked", "ray_cluster", "ray_resources"),
    (
        "amd-vllm-ascend-aclgraph-capture-begin-207005-alloc-fail",
        "Fail",
        "cuda_graph_crash",
        "npu_graph_capture_failed",
    ),
    ("akc-ray-dataloader-actor-dead-raylet-heartbeat-io", "Blocked", "ray_cluster", "component:comp_ray"),
    ("akc-scenicplus-jupyter-ray-node-startup-timeout", "Blocked", "ray_cluster", "ray_gcs"),
    ("ake-paddle-enforce-allocating-gpu-info", "Fail", "cuda_oom", "cuda_oom"),
    (
        "akf-consistencydecoder-runwayml-sd15-removed",
        "Blocked",
        "hf_offline_missing",
        "hf_local_entry_missing",
    ),
    (
        "akd-mmpose-mmcv2rc4-incompatible-assertion-mim-list",
        "Blocked",
        "missing_dependency",
        "exc_version_requirement",
    ),
    (
        "akd-paddle-win-cublas64-102-dll-precondition-notmet",
        "Blocked",
        "missing_dependency",
        "framework_dynamic_library_not_configured",
    ),
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
    ("ray_node_startup_timeout_windows", "Blocked", "ray_cluster", "ray_gcs"),
    ("diffusers_not_cached_locally_comfyui", "Blocked", "hf_offline_missing", "hf_local_entry_missing"),
    (
        "paddle_dynamic_library_cublas_windows",
        "Blocked",
        "missing_dependency",
        "framework_dynamic_library_not_configured",
    ),
    ("mmcv_version_incompatible_mmdet", "Blocked", "missing_dependency", "exc_version_requirement"),
    ("paddle_enforce_allocating_unit_test", "Fail", "cuda_oom", "cuda_oom"),
    ("jupyter_kernel_vscode_system_python", "Blocked", "container_venv_mismatch", "import_launcher_module"),
    ("pytest_collect_megatron_core_name", "Blocked", "bridge_import", "import_name_from_bridge_stack"),
    ("tf1_restore_see_above_shape_mismatch", "Fail", "checkpoint_failure", "component:comp_checkpoint"),
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
    "[I 10:36:49 NotebookApp] Kernel started: python3 -m ipykernel_launcher (/opt/conda/envs/train/bin/python)",
    "collected 12 items; ImportError while importing test module is reported below when any",
    "| E5 iter[ 14/ 15] | [Loss] 0.4312 | [step] 89 |",
    "I1025 09:45:46.570907   837   837 node_manager.cc:3078] Registered worker",
    "INFO node startup took 2.1 s (socket name tcp://127.0.0.1:63251 found)",
    "model is cached locally; skipping metadata fetch from the Hub",
    "mmcv 1.7.0 is compatible; install mmcv>=1.3.8 for other projects",
    "[INFO] the third-party dynamic library (libcudnn.so) that Paddle depends on loaded",
    "memory check: allocating <= available (1 GB <= 10 GB)",
    "NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
    "{'loss': 0.6931, 'logps/chosen': -252.83, 'logits/chosen': -1.25, 'epoch': 0.03}",
    "INFO Failed to import optional module flash_attn; falling back to sdpa",
]


@pytest.mark.parametrize(
    "text",
    [
        tuning_case("ald-pass-fast-sd-tensorflow-libnvinfer-tensorrt-warnings"),
        (REAL / "tf_dso_loader_warnings_pass.log").read_text(),
    ],
)
def test_glog_warning_lines_only_warn(tmp_path: Path, text: str) -> None:
    res = tri_text(tmp_path, text)
    assert_no_finding(res)
    assert {f["rule"] for f in res["findings"]} == {"undefined_symbol+in_warning"}
    # the same warnings explain a death that nothing else explains
    died = tri_text(tmp_path, text.rstrip("\n") + "\nAborted (core dumped)\n")
    assert_primary(died, "Blocked", "missing_dependency", "undefined_symbol+in_warning")


def test_a_truncated_archive_names_data_missing_as_the_alternative(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("ajb-ckpt-earth2studio-corrdiff-badzipfile"))
    assert "data_missing" in {a["class"] for a in res["alternatives"]}
    # the same words in a message that is not the reader's own error are not this family
    text = "OSError: [Errno 2] No such file or directory: 'truncated file list.txt'\n"
    assert primary(tri_text(tmp_path, text))[2] != "exc_archive_truncated"


def test_a_finished_weight_reload_is_not_a_stall(tmp_path: Path) -> None:
    text = tuning_case("ame-sglang-update-weights-dp2-works-pass")
    assert_no_finding(tri_text(tmp_path, text))
    # cut before the reload ended, its shards still loading: the log ends inside engine start-up
    cut = text.split("[2024-10-28 15:38:53 DP1 TP0] Update weights end.")[0].split("\n")
    stalled = tri_text(tmp_path, "\n".join(line for line in cut if "100%" not in line) + "\n")
    assert_primary(stalled, "Fail", "hang", "stall:server_startup")


@pytest.mark.parametrize(("case", "verdict", "cls", "rule"), TUNING_CASES)
def test_families_on_tuning_cases(tmp_path: Path, case: str, verdict: str, cls: str, rule: str) -> None:
    assert_primary(tri_text(tmp_path, tuning_case(case)), verdict, cls, rule)


@pytest.mark.parametrize(("name", "verdict", "cls", "rule"), REAL_FIXTURES)
def test_families_on_real_fixtures(name: str, verdict: str, cls: str, rule: str) -> None:
    assert_primary(tri(name), verdict, cls, rule)


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_near_misses(tmp_path: Path, line: str) -> None:
    assert_no_finding(tri_text(tmp_path, line + "\n"))
