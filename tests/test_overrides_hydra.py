"""Override validation with Hydra's grammar against a NeMo-RL-shaped config with a defaults chain."""

from __future__ import annotations

import pytest
from plan_helpers import make_repos, spec, write_nemo_configs

from console.errors import SpecError
from console.plan import build_plan, validate_overrides
from console.plan.overrides import effective_values, load_config

pytestmark = pytest.mark.timeout(60)
CFG = "examples/configs/grpo_math_1B_megatron.yaml"


@pytest.fixture()
def nemo(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    repos = make_repos(tmp_path)
    write_nemo_configs(repos[1])
    return repos


def test_defaults_chain_is_merged(nemo):
    cfg = load_config(f"{nemo[1]}/{CFG}")
    assert cfg["policy"]["megatron_cfg"]["enabled"] is True  # child wins
    assert cfg["policy"]["megatron_cfg"]["tensor_model_parallel_size"] == 1  # parent kept
    assert cfg["grpo"]["max_num_steps"] == 1000000


def test_known_keys_pass_unknown_refused_with_did_you_mean(nemo):
    repo = nemo[1]
    assert (
        validate_overrides(
            ["grpo.max_num_steps=3", "policy.megatron_cfg.peft.enabled=true", "~data.shuffle"], repo, CFG
        )
        == []
    )
    with pytest.raises(
        SpecError, match=r"'grpo.max_num_step' is not a key of .*did you mean 'grpo.max_num_steps'"
    ):
        validate_overrides(["grpo.max_num_step=3"], repo, CFG)
    with pytest.raises(SpecError, match=r"did you mean 'data.train.dataset_name'"):
        validate_overrides(["data.dataset_name=x"], repo, CFG)
    with pytest.raises(SpecError, match=r"prefix '\+' to add it or '\+\+'"):
        validate_overrides(["token_capture.enabled=true"], repo, CFG)


def test_repo_alone_finds_the_level0_config(nemo):
    with pytest.raises(SpecError, match="did you mean 'grpo.max_num_steps'"):
        validate_overrides(["grpo.max_num_step=3"], repo=nemo[1])
    assert validate_overrides(["grpo.max_num_steps=3"], repo=nemo[1]) == []


def test_plus_and_double_plus(nemo):
    repo = nemo[1]
    assert validate_overrides(["+token_capture.enabled=true"], repo, CFG) == []
    with pytest.raises(SpecError, match="already exists"):
        validate_overrides(["+grpo.max_num_steps=3"], repo, CFG)
    warnings = validate_overrides(["++checkpointing.pretrained_checkpoint.path=/x"], repo, CFG)
    assert warnings and "does not have" in warnings[0]
    assert validate_overrides(["++grpo.max_num_steps=3"], repo, CFG) == []


def test_missing_config_only_checks_syntax(tmp_path):
    w = validate_overrides(["anything.goes=1"], str(tmp_path), CFG)
    assert w and w[0].startswith("override keys not checked")
    assert validate_overrides(["anything.goes=1"]) == []
    with pytest.raises(SpecError):
        validate_overrides(["a.b=[1,"])


def test_plan_checks_keys_against_the_repo_config(nemo):
    with pytest.raises(SpecError, match="did you mean 'grpo.max_num_steps'"):
        build_plan(spec("nemo-rl", nemo, (0,), overrides=["grpo.max_num_step=3"]))
    plan = build_plan(spec("nemo-rl", nemo, (0,), overrides=["grpo.max_num_steps=3"]))
    assert plan.step("l0-grpo-megatron").argv[-1] == "grpo.max_num_steps=3"


def test_unquoted_wrapper_rules():
    with pytest.raises(SpecError, match="whitespace"):
        validate_overrides(["a='x y'"], unquoted_script="tests/functional/grpo_megatron.sh")
    w = validate_overrides(["trainer.logger=[console,file]"], unquoted_script="run.sh")
    assert w and "glob" in w[0]
    assert validate_overrides(["a='x y'"]) == []  # fine where nothing splits it


def test_effective_values_last_wins():
    vals = effective_values(["--config", "x.yaml", "a.b=1", "c=2", "a.b=5", "~c"])
    assert vals == {"a.b": "5"}
