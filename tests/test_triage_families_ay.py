"""Triage added with corpus rounds ay and az (issue 12), on real excerpts (tuning cases of ``tests/corpus/``, real
fixtures) and near misses that must not fire (the synthetic fixture built from xFormers' dispatcher format,
``xformers_no_cuda_kernels_dispatch.log``, is checked with the other fixtures in ``expected.json``):

- a loss whose key ends in "_loss" followed by one space and nan ("train_loss nan", nnU-Net) is a NaN loss; so is a
  tensor or gradient said to hold NaNs ("A tensor with all NaNs was produced in Unet", "Q gradient: NaNs!");
- a CUDA kernel's own assert ("IndexKernel.cu:93: ... Assertion `...") is a CUDA fault also when the paste wrapped the
  line before "failed";
- kohya's trainers' "No data found. Please verify arguments" is an empty dataset;
- a failed import logged at a warning level, or one a library caught and went on from (apex's "Using Python fallback.
  Original ImportError was: ...", xFormers' "Error caught was: No module named 'triton'"), was only warned about;
- an environment's entry point missing in other shells' and runtimes' words (bash's "accelerate: command not found",
  "command torchrun not found", a Go runtime's 'exec: "python3": executable file not found in $PATH', "Executable uv
  not found on worker", "bash: line 1: /home/u/.../bin/uv: No such file or directory") ran outside the environment;
- NCCL's own words "unhandled system error" count without NCCL's name on the line;
- xFormers without its CUDA kernels (its dispatcher's "xFormers wasn't build with CUDA support") is a missing
  dependency; its import-time warning "xFormers can't load C++/CUDA extensions" is transient;
- a trainer's report of the interrupt it caught ("Detected KeyboardInterrupt, attempting graceful shutdown") is a
  cancel; a library's "the pipeline is private or gated" is a gated download; a library's own configuration
  exception type (MisconfigurationException, OlmoConfigurationError) is a configuration error;
- a loader outside torch that "cannot find tensor X" in the checkpoint is a checkpoint that does not fit; cuDNN's
  frontend failing to build a plan ("[cudnn_frontend] Error: No execution plans built successfully") is a CUDA-class
  fault; a program that printed its error's chain ("Error: ...", then "Caused by:" alone on its line) died;
- round ba: a loss printed as "Nan"; a DataLoader worker killed by SIGBUS is shared memory that ran out; Spark
  RAPIDS' SplitAndRetryOOM; an object or class lacking an attribute is one version written against another when an
  installed package or the Megatron stack made the access (verl's layer over Megatron-Core counts as that stack),
  and a plain bug otherwise; a module named for checkpoints (_checkpoint.py, generate_param_only_checkpoint.py), a
  ckpts/ package and an optimizer state's load are checkpoint frames, activation checkpointing is not;
- round bb: an exception printed as its repr (Hydra's "Error in call to target" over 'TypeError("...")') is read as
  its "Type: message" line; a registry without the type a config names ("'bevformer is not in the models
  registry'") is a configuration error; an error whose message says a package is missing ("requires xfuser
  package", "Please install numpy") is a missing dependency; llama's "Loading a checkpoint for MP=2 but world size
  is 1" is the launch's process count, not the checkpoint.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import assert_no_finding, assert_primary, primary, tri, tri_text, tuning_case

# (tuning case, verdict, class, rule) of each family
TUNING_CASES = [
    ("awf-mamba-in-cnn-train-loss-nan-epoch631", "Fail", "metric_failure", "nan_inf_metric"),
    ("ayc-nnunetv2-nan-train-val-loss-png", "Fail", "metric_failure", "nan_inf_metric"),
    ("ayd-flash-attn-v2-backward-nan-dq", "Fail", "metric_failure", "nan_inf_metric"),
    ("ayh-a1111-nansexception-unet-all-nans", "Fail", "metric_failure", "nan_inf_metric"),
    ("ayg-r1v-zero3-indexkernel-device-assert", "Fail", "cuda_error", "cuda_fault"),
    ("ayh-sdscripts-no-data-found-zero-train-images", "Blocked", "data_missing", "data_files_missing"),
    ("ave-kohya-gui-no-data-found-train-data-dir", "Blocked", "data_missing", "data_files_missing"),
    (
        "aoc-slurm-conda-not-activated-torchrun-not-found",
        "Blocked",
        "container_venv_mismatch",
        "env_entry_point_not_on_path",
    ),
    (
        "asc-time-llm-accelerate-command-not-found-venv",
        "Blocked",
        "container_venv_mismatch",
        "env_entry_point_not_on_path",
    ),
    (
        "auf-windmill-worker-uv-not-on-path",
        "Blocked",
        "container_venv_mismatch",
        "env_entry_point_not_on_path",
    ),
    (
        "vb-opea-vllm-image-k8s-nonroot-python3-not-found",
        "Blocked",
        "container_venv_mismatch",
        "env_entry_point_not_on_path",
    ),
    (
        "asc-ray-uv-hook-driver-local-uv-path-on-cluster",
        "Blocked",
        "container_venv_mismatch",
        "launcher_env_executable_missing",
    ),
    ("axh-hugectr-dcn-multigpu-ncclgroupend-system-error", "Fail", "nccl", "nccl_error"),
    (
        "avh-xformers-not-built-with-cuda-vllm-internvl",
        "Blocked",
        "missing_dependency",
        "xformers_without_cuda_kernels",
    ),
    ("azg-lightning-pycharm-keyboardinterrupt-shutdown", "Cancelled", "cancelled", "user_interrupt"),
    ("aza-whisperx-pyannote-diarization-gated-download", "Blocked", "hf_offline_missing", "hf_gated"),
    ("aye-olmo-save-folder-interpolation-no-exist", "Blocked", "config_error", "exc_config_named"),
    ("azg-lightning-deepspeed-grad-accum-misconfiguration", "Blocked", "config_error", "exc_config_named"),
    (
        "arf-tei-candle-missing-word-embeddings-tensor",
        "Fail",
        "checkpoint_failure",
        "weights_tensor_not_found",
    ),
    ("azc-tei-candle-distilbert-missing-tensor", "Fail", "checkpoint_failure", "weights_tensor_not_found"),
    (
        "aoe-dynamo-run-nonexistent-model-missing-siblings-field",
        "Fail",
        "unknown_error",
        "fatal:fatal_error_chain",
    ),
    ("awf-llmc-cudnn-att-no-execution-plans", "Fail", "cuda_error", "cuda_fault"),
    ("azd-te-fused-attn-no-execution-plans-h100", "Fail", "cuda_error", "cuda_fault"),
    ("atd-maxtext-param-only-ckpt-read-train-checkpoint", "Fail", "checkpoint_failure", "frames_checkpoint"),
    ("avc-gemma-load-params-no-item-metadata-hf-dir", "Fail", "checkpoint_failure", "frames_checkpoint"),
    (
        "aye-nanotron-load-optimizer-keyerror-none-tp-change",
        "Fail",
        "checkpoint_failure",
        "frames_checkpoint",
    ),
    (
        "bae-pointflowmatch-unet1d-use-dropout-upstream-diffusion-policy",
        "Blocked",
        "config_error",
        "exc_signature_mismatch",
    ),
    ("bbc-bevformer-detector-not-in-models-registry", "Blocked", "config_error", "exc_registry_missing_type"),
    (
        "bbc-bevformer-windows-custom-dataset-not-registered",
        "Blocked",
        "config_error",
        "exc_registry_missing_type",
    ),
    ("bbh-hunyuanvideo-xdit-ulysses-requires-xfuser", "Blocked", "missing_dependency", "exc_install_hint"),
    ("aqc-cutesv-apptainer-host-local-python-numpy", "Blocked", "missing_dependency", "exc_install_hint"),
    ("azh-llama2-13b-chat-mp2-world-size-1", "Blocked", "config_error", "model_parallel_world_size_mismatch"),
    ("bbg-codellama-34b-mp4-world-size-1", "Blocked", "config_error", "model_parallel_world_size_mismatch"),
    # round ba
    ("bac-autogptq-avg-loss-nan-qwen15", "Fail", "metric_failure", "nan_inf_metric"),
    ("bah-fastai-docker-dataloader-bus-error-shm", "Blocked", "no_space", "shm_exhausted"),
    ("baf-spark-rapids-split-and-retry-oom", "Fail", "cuda_oom", "cuda_oom"),
    (
        "abc-bridge-installed-megatron-pkg-shadows-repo-checkout",
        "Blocked",
        "bridge_import",
        "exc_attribute_drift+bridge_stack_caller",
    ),
    (
        "wd-verl-mcore-get-megatron-optimizer-no-weight-decay-cond",
        "Blocked",
        "bridge_import",
        "exc_signature_mismatch+bridge_stack_caller",
    ),
    (
        "m-venv-mismatch-openrlhf-llmengine-model-executor",
        "Blocked",
        "missing_dependency",
        "exc_attribute_drift+library_caller",
    ),
]

REAL_FIXTURES = [
    ("nnunet_train_loss_nan_epoch", "Fail", "metric_failure", "nan_inf_metric"),
    ("kohya_no_data_found_zero_images", "Blocked", "data_missing", "data_files_missing"),
    ("lightning_keyboardinterrupt_graceful_shutdown", "Cancelled", "cancelled", "user_interrupt"),
    ("pyannote_gated_pipeline_download", "Blocked", "hf_offline_missing", "hf_gated"),
    ("lightning_deepspeed_misconfiguration", "Blocked", "config_error", "exc_config_named"),
    ("cuda_kernel_assert_wrapped_line", "Fail", "cuda_error", "cuda_fault"),
    ("hugectr_unhandled_system_error_bare", "Fail", "nccl", "nccl_error"),
    (
        "shell_accelerate_command_not_found",
        "Blocked",
        "container_venv_mismatch",
        "env_entry_point_not_on_path",
    ),
    ("candle_cannot_find_tensor_tei", "Fail", "checkpoint_failure", "weights_tensor_not_found"),
    ("llama_mp_checkpoint_world_size", "Blocked", "config_error", "model_parallel_world_size_mismatch"),
    (
        "megatron_installed_package_namespace_attr",
        "Blocked",
        "bridge_import",
        "exc_attribute_drift+bridge_stack_caller",
    ),
]

NEAR_MISSES = [
    # a finite "_loss", and a loss column that reads nan in a table of statistics whose window is still empty
    "2023-12-20 00:50:44.726418: train_loss -0.7834",
    "loss/Average                    nan",
    # NaNs as the subject of a check, not as what a tensor holds
    "Checking for NaNs in the inputs is enabled (--detect-anomaly)",
    # a word that ends in "-deepspeed" before "command not found" is a line-continuation slip, not an entry point
    "dense2dense_distillation.sh: line 52: --deepspeed: command not found",
    # an entry point that was found, and prose about gated repos
    "torchrun found at /opt/conda/bin/torchrun",
    "Some models on the Hub are gated: accept their terms before downloading.",
    # a configuration object's repr, no exception
    "TrainerConfig(gradient_accumulation_steps=4, misconfiguration_checks=True)",
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


@pytest.mark.parametrize(
    "case",
    ["ayc-nnunet-apex-amp-c-gradient-overflow-noise", "ayd-apex-amp-c-python-fallback-warning-trains-fine"],
)
def test_an_import_a_library_fell_back_from_is_no_failure(tmp_path: Path, case: str) -> None:
    """apex's warning that it uses its Python fallback, quoting the ImportError it caught: a healthy run."""
    res = tri_text(tmp_path, tuning_case(case))
    assert primary(res)[0] in ("Pass", "Incomplete")
    assert [f["rule"] for f in res["findings"]] == ["import_missing_module+in_warning"]


def test_a_warned_import_counts_when_the_run_then_died(tmp_path: Path) -> None:
    """Only warned about, the failed import still explains a run that then died and showed nothing else."""
    text = (
        "WARNING: No module named 'flash_attn'; falling back to eager attention\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in <module>\n'
        "    main()\n"
        "SystemExit: 1\n"
    )
    res = tri_text(tmp_path, text)
    assert primary(res)[0] in ("Blocked", "Fail")


def test_a_caught_import_among_other_failures_is_not_the_cause(tmp_path: Path) -> None:
    """xFormers' caught Triton import above an empty dataset: the dataset is the cause."""
    res = tri_text(tmp_path, tuning_case("ave-kohya-gui-no-data-found-train-data-dir"))
    assert_primary(res, "Blocked", "data_missing", "data_files_missing")


def test_the_xformers_import_warning_in_a_healthy_run_is_no_failure(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("g-pass-llamafactory-vllm-no-flash-attn-xformers-cant-load"))
    assert primary(res)[0] in ("Pass", "Incomplete")


def test_the_xformers_import_warning_fixture_is_transient() -> None:
    res = tri("xformers_cant_load_extensions_healthy_vllm")
    assert primary(res)[0] == "Incomplete"
    assert [f["rule"] for f in res["findings"]] == ["xformers_extensions_not_loaded"]


def test_a_cause_line_with_text_is_no_error_chain(tmp_path: Path) -> None:
    """Only "Caused by:" alone on its line closes an error chain; a "Caused by: ..." with its text on the line is
    a line of a stack that another marker has to explain."""
    res = tri_text(tmp_path, "INFO starting\nCaused by: retrying the connection (attempt 2)\n")
    assert primary(res)[0] in ("Pass", "Incomplete")


def test_the_nccl_words_without_nccl_still_name_the_collective(tmp_path: Path) -> None:
    res = tri_text(tmp_path, "RuntimeError: Runtime error: unhandled cuda error\n")
    assert primary(res)[:2] == ("Fail", "nccl")


_ATTR = """Traceback (most recent call last):
  File "train.py", line 9, in <module>
    main()
  File "{path}", line 83, in build_model
    if model_type == ModelType.encoder_and_decoder:
AttributeError: {what} has no attribute 'encoder_and_decoder'
"""


def test_an_attribute_the_megatron_layer_misses_is_the_stack_version(tmp_path: Path) -> None:
    text = _ATTR.format(path="/work/verl/verl/utils/megatron_utils.py", what="type object 'ModelType'")
    res = tri_text(tmp_path, text)
    assert primary(res)[:2] == ("Blocked", "bridge_import")


def test_an_attribute_missing_in_the_users_code_is_a_bug(tmp_path: Path) -> None:
    text = _ATTR.format(path="/work/myproj/build.py", what="type object 'ModelType'")
    assert primary(tri_text(tmp_path, text))[:2] == ("Fail", "unknown_error")


def test_none_has_no_api_even_inside_a_package(tmp_path: Path) -> None:
    text = _ATTR.format(path="/opt/conda/lib/python3.10/site-packages/lib/util.py", what="'NoneType' object")
    assert primary(tri_text(tmp_path, text))[:2] == ("Fail", "unknown_error")


def test_activation_checkpointing_frames_are_no_checkpoint(tmp_path: Path) -> None:
    """torch/utils/checkpoint.py recomputes activations in backward: a bug there is not a checkpoint that failed."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 40, in <module>\n'
        "    loss.backward()\n"
        '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/checkpoint.py", line 319, in backward\n'
        "    outputs = ctx.run_function(*detached_inputs)\n"
        "ValueError: too many values to unpack (expected 2)\n"
    )
    assert primary(tri_text(tmp_path, text))[:2] == ("Fail", "unknown_error")


def test_an_exception_repr_inside_prose_is_not_read(tmp_path: Path) -> None:
    """A repr must stand alone on its line or follow an error's lead-in; one in a sentence is not an exception."""
    res = tri_text(tmp_path, 'We now raise TypeError("bad") when the input is empty, see the changelog.\n')
    assert_no_finding(res)


def test_a_registry_lookup_that_works_is_no_finding(tmp_path: Path) -> None:
    assert_no_finding(tri_text(tmp_path, "INFO: registered BEVFormer in the models registry\n"))
