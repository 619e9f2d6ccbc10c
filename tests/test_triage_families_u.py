"""Triage families added with corpus rounds t and u (issue 12), on real excerpts (tuning cases of
``tests/corpus/`` and fixtures from other public threads) and against lines that must not fire:

- a death that no rule explains is weighed by context like any finding: an abort where ROCR/HIP_VISIBLE_DEVICES
  are set is the visibility conflict;
- `python -m X` run by the system interpreter ("/usr/bin/python: No module named X") is the wrong environment;
- safetensors refusing tensors that share memory is a failed checkpoint save; verl's model_merger.py in the
  frames is checkpoint conversion;
- vLLM rejecting a rollout request (a token id out of vocabulary, max_tokens 0) is a generation failure;
- an attribute missing from a module of the Megatron stack is bridge_import;
- torch.distributions refusing a parameter the model computed (NaN) is a metric failure; so is Python's
  FloatingPointError as training loops raise it (minimum loss scale reached, loss became NaN);
- (round v) TensorFlow's "OOM when allocating tensor" and llama.cpp's "cudaMalloc failed: out of memory" are GPU OOMs;
  pkg_resources' VersionConflict is a dependency; "No usable temporary directory found" is a full disk;
- "HIP_VISIBLE_DEVICES contains more devices than ROCR_VISIBLE_DEVICES", the Hub's whoami endpoint answering 429,
  "ncclCommInitRank failed: unhandled system error" and SGLang's piecewise-graph advice name their classes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage_helpers import primary, tri, tri_text, tuning_case


def test_an_abort_where_amd_visibility_variables_are_set_is_the_visibility_conflict(tmp_path: Path) -> None:
    res = tri_text(tmp_path, tuning_case("uc-rocm-te-import-aborts-empty-hip-visible-devices"))
    verdict, cls, rule = primary(res)
    assert (verdict, cls) == ("Blocked", "rocr_visible_devices")
    assert rule is not None and rule.endswith("+context:amd_visible_devices")
    # the same abort with no visibility variable in sight stays an unexplained death
    text = "terminate called after throwing an instance of 'std::runtime_error'\nAborted (core dumped)\n"
    assert primary(tri_text(tmp_path, text))[:2] == ("Fail", "unknown_error")


def test_the_system_interpreter_running_a_module_is_the_wrong_environment(tmp_path: Path) -> None:
    for case in (
        "uc-sudo-dist-train-usr-bin-python-no-torch-distributed",
        "ta-deepspeed-pdsh-host-outside-container",
    ):
        res = tri_text(tmp_path, tuning_case(case))
        assert primary(res) == ("Blocked", "container_venv_mismatch", "import_system_interpreter"), case
        assert "missing_dependency" in [a["class"] for a in res["alternatives"]]
    # an environment's own interpreter missing the module is a missing dependency
    text = "/opt/conda/envs/train/bin/python: No module named deepspeed\n"
    assert primary(tri_text(tmp_path, text))[1] == "missing_dependency"


@pytest.mark.parametrize(
    ("name", "verdict", "cls", "rule"),
    [
        ("vllm_token_id_out_of_vocabulary", "Fail", "generation_failure", "generation_request_invalid"),
        ("megatron_core_attribute_moved", "Blocked", "bridge_import", "exc_bridge_stack_attribute"),
        ("checkpoint_shared_tensors_safetensors", "Fail", "checkpoint_failure", "checkpoint_shared_tensors"),
        ("torch_distribution_nan_loc_vae", "Fail", "metric_failure", "exc_distribution_invalid_values"),
        ("torch_distribution_nan_loc_pyro", "Fail", "metric_failure", "exc_distribution_invalid_values"),
        ("tf_oom_when_allocating_tensor", "Fail", "cuda_oom", "cuda_oom"),
        ("llamacpp_cudamalloc_oom", "Fail", "cuda_oom", "cuda_oom"),
        ("fairseq_minimum_loss_scale", "Fail", "metric_failure", "exc_floating_point"),
        ("pkg_resources_version_conflict", "Blocked", "missing_dependency", "exc_version_conflict"),
        ("tempfile_no_usable_tempdir", "Blocked", "no_space", "no_space_errno28"),
        ("ray_owner_died_unhandled", "Blocked", "ray_cluster", "exc_ray_actor_died"),
    ],
)
def test_round_u_families_on_real_fixtures(name: str, verdict: str, cls: str, rule: str) -> None:
    assert primary(tri(name)) == (verdict, cls, rule)


@pytest.mark.parametrize(
    ("case", "verdict", "cls"),
    [
        ("ua-easyr1-model-merger-dtensor-assert", "Fail", "checkpoint_failure"),
        ("ud-swift-vllm-engine-max-tokens-zero-context-full", "Fail", "generation_failure"),
        ("ud-megatron-deepspeed-moe-inference-megatron-mpu-api-moved", "Blocked", "bridge_import"),
        ("uc-therock-hip-visible-more-than-rocr-visible", "Blocked", "rocr_visible_devices"),
        ("ub-autotrain-whoami-v2-429-reported-as-invalid-token", "Blocked", "hf_rate_limit"),
        ("ub-horovod-tf-srun-ncclcomminitrank-unhandled-system-error", "Fail", "nccl"),
        ("ud-sglang-nsa-piecewise-cuda-graph-num-tokens-mismatch", "Fail", "cuda_graph_crash"),
        ("o-ckpt-phi3v-finetune-shared-tensors-save", "Fail", "checkpoint_failure"),
    ],
)
def test_round_u_families_on_tuning_cases(tmp_path: Path, case: str, verdict: str, cls: str) -> None:
    assert primary(tri_text(tmp_path, tuning_case(case)))[:2] == (verdict, cls)


def test_near_misses_of_the_round_u_families(tmp_path: Path) -> None:
    # an attribute missing from a third-party module is not the Megatron stack
    text = "AttributeError: module 'transformer_engine' has no attribute 'pytorch'\n"
    assert primary(tri_text(tmp_path, text))[1] != "bridge_import"
    # a token id within a sentence that is not vLLM's check
    assert primary(tri_text(tmp_path, "INFO token id 151643 is the eos token\n"))[0] == "Incomplete"
    # whoami answered fine
    assert primary(tri_text(tmp_path, "INFO Request /api/whoami-v2 - 200 in 0.2s\n"))[0] == "Incomplete"


def test_a_signature_mismatch_raised_inside_the_megatron_stack_is_bridge_import(tmp_path: Path) -> None:
    # round w tuning: Megatron's MoE router calls a routing function patched for another Megatron version
    res = tri_text(tmp_path, tuning_case("wd-verl-mcore-router-patched-routing-padding-mask-kwarg"))
    assert primary(res) == ("Blocked", "bridge_import", "exc_signature_mismatch+bridge_stack_caller")
    assert "config_error" in [a["class"] for a in res["alternatives"]]
    # the same TypeError raised in the user's own code stays a configuration/signature problem
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 12, in <module>\n'
        "    build(cfg, padding_mask=m)\n"
        "TypeError: build() got an unexpected keyword argument 'padding_mask'\n"
    )
    assert primary(tri_text(tmp_path, text))[1] == "config_error"


def test_xla_nccl_operations_with_nested_arguments_and_modelscope_missing_repos(tmp_path: Path) -> None:
    assert primary(tri_text(tmp_path, tuning_case("wd-xla-nccl-group-recv-invalid-root-argument")))[:2] == (
        "Fail",
        "nccl",
    )
    res = tri_text(tmp_path, tuning_case("wb-vllm-ascend-modelscope-repo-not-exists"))
    assert primary(res)[:2] == ("Blocked", "hf_offline_missing")


def test_a_finished_log_that_ends_while_429s_are_retried_stopped_on_the_rate_limit(tmp_path: Path) -> None:
    # round v tuning: the Hub download of a model stops while huggingface_hub backs off from 429s
    res = tri_text(tmp_path, tuning_case("vd-immich-ml-clip-574-files-http-429-head"))
    assert primary(res) == ("Blocked", "hf_rate_limit", "hf_429_retried+log_ends_retrying")
    assert res["primary"]["confidence"] <= 0.45
    # the same retries followed by the run going on are noise (the retry worked)
    retry = "HTTP Error 429 thrown while requesting HEAD https://huggingface.co/x/resolve/main/config.json\n"
    going_on = "".join(f"step {i}/100 loss 1.{i:02d}\n" for i in range(1, 12))
    assert primary(tri_text(tmp_path, retry + going_on))[0] == "Incomplete"
    assert primary(tri("hf_429_retried"))[0] == "Incomplete"
