"""Bad input: exit code 2 and one clear line each; risky specs: warnings with the procedures' advice."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from plan_helpers import make_repos, spec

from console.cli import main
from console.errors import SpecError
from console.plan import build_plan
from console.spec import RunSpec

pytestmark = pytest.mark.timeout(60)


@pytest.fixture()
def repos(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("NEMO_RL_REPO", raising=False)
    monkeypatch.delenv("VERL_REPO", raising=False)
    monkeypatch.delenv("BRIDGE_REPO", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    return make_repos(tmp_path)


def _cli(args: list[str], capsys) -> tuple[int, str]:
    rc = main(["plan", *args])
    err = capsys.readouterr().err.strip()
    return rc, err


def test_errors_exit_2_with_one_line(repos, tmp_path, capsys):
    bridge, nemo, verl = repos
    base = ["--framework", "nemo-rl", "--repo", nemo, "--bridge-repo", bridge]
    plain = tmp_path / "plain"
    plain.mkdir()
    cases = [
        (base + ["--level", "7"], "Level 7 is not a nemo-rl level"),
        (
            ["--framework", "verl", "--repo", verl, "--bridge-repo", bridge, "--level", "6"],
            "Level 6 is not a verl level",
        ),
        (base + ["--variant", "nope"], "unknown variant 'nope'"),
        (base + ["--variant", "delta-compression"], "belongs to Level 2"),
        (base + ["--level", "5"], "Level 5 (Architecture-specific e2e) needs a variant"),
        (
            ["--framework", "nemo-rl", "--repo", str(tmp_path / "missing"), "--bridge-repo", bridge],
            "no such directory",
        ),
        (["--framework", "nemo-rl", "--repo", str(plain), "--bridge-repo", bridge], "not a git checkout"),
        (base + ["--model", str(tmp_path / "no-model")], "no such local model path"),
        (base + ["--model", "not a model id"], "neither an existing local path nor a Hugging Face id"),
        (base + ["--override", "a.b=[1,"], "does not parse as a Hydra override"),
        (base + ["--override", "a.b=1,2"], "is a sweep"),
        (base + ["--override", "policy.model_name=my model"], "contains whitespace"),
        (base + ["--env", "1BAD=x"], "invalid environment variable name"),
        (base + ["--env", "NOEQUALS"], "expected KEY=VALUE"),
        (["--framework", "demo", "--override", "x=[1,"], "does not parse as a Hydra override"),
        (["--framework", "demo", "--level", "1"], "Level 1 is not a demo level"),
        (base + ["--bridge-test", "tests/unit_tests/nope.py"], "not found in the Bridge checkout"),
    ]
    for args, needle in cases:
        rc, err = _cli(args, capsys)
        assert rc == 2, (args, err)
        assert needle in err, (needle, err)
        assert len(err.splitlines()) == 1, err


def test_whitespace_error_names_the_wrapper_and_the_choice(repos):
    with pytest.raises(SpecError) as exc:
        build_plan(spec("nemo-rl", repos, (0,), overrides=["policy.model_name=a b"]))
    msg = str(exc.value)
    assert "tests/functional/grpo_megatron.sh forwards $@ unquoted" in msg and "refused" in msg


def test_spaces_are_fine_when_no_wrapper_splits_them(repos):
    # Level 2 runs examples/run_grpo.py directly: the argv element stays whole.
    plan = build_plan(spec("nemo-rl", repos, (2,), overrides=["logger.wandb.name='my run'"]))
    assert plan.step("l2-grpo-non-colocated").argv[-1] == "logger.wandb.name='my run'"


def test_tp4_with_unequal_batches_warns_with_advice(repos):
    plan = build_plan(
        spec(
            "nemo-rl",
            repos,
            (0,),
            overrides=["policy.megatron_cfg.tensor_model_parallel_size=4", "cluster.gpus_per_node=4"],
        )
    )
    tp = [w for w in plan.warnings if "TP=4" in w]
    assert tp and "policy.train_micro_batch_size=1 != policy.logprob_batch_size=4" in tp[0]
    assert "NRL_IGNORE_TP_ACCURACY_CHECK" in tp[0] and "TP 1 or 2" in tp[0]
    ok = build_plan(
        spec(
            "nemo-rl",
            repos,
            (0,),
            overrides=["policy.megatron_cfg.tensor_model_parallel_size=4", "policy.logprob_batch_size=1"],
        )
    )
    assert not [w for w in ok.warnings if "TP=4" in w]


def test_more_gpus_than_visible_warns(repos, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    plan = build_plan(spec("nemo-rl", repos, (0,)))
    assert any("l0-grpo-megatron" in w and "2 GPUs, 1 visible" in w for w in plan.warnings)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7")
    assert not build_plan(spec("nemo-rl", repos, (0,))).warnings
    verl = build_plan(spec("verl", repos, (0,)))
    assert not verl.warnings
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    w = build_plan(spec("verl", repos, (0,))).warnings
    assert any("NUM_GPUS" in x for x in w)
    assert not build_plan(spec("verl", repos, (0,), env={"NUM_GPUS": "2"})).warnings


def test_moe_variant_without_model_warns(repos):
    plan = build_plan(spec("nemo-rl", repos, (4,), ("moe-ep",)))
    assert any("needs the model under test" in w for w in plan.warnings)


def test_module_entry_point_exit_code(repos):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "console",
            "plan",
            "--framework",
            "nemo-rl",
            "--level",
            "9",
            "--repo",
            repos[1],
            "--bridge-repo",
            repos[0],
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Level 9" in proc.stderr


def test_plan_without_a_checkout_resolves_on_the_manifest(repos, capsys):
    """`plan` with no --repo/--bridge-repo: built and resolved against the upstream manifest, and it says so;
    a run still needs both checkouts."""
    from console.plan.resolve import load_manifest

    bridge, nemo, verl = repos
    commits = {k: v["commit"][:12] for k, v in load_manifest()["repos"].items()}
    rc = main(
        ["plan", "--framework", "nemo-rl", "--level", "0", "--level", "2", "--variant", "delta-compression"]
    )
    out = capsys.readouterr().out
    assert rc == 0
    first = out.splitlines()[0]
    assert first.startswith(
        "warning: no checkout given for NeMo-RL ($NEMO_RL_REPO) and the Bridge ($BRIDGE_REPO)"
    )
    assert (
        f"resolved against the upstream manifest of nemo-rl {commits['nemo-rl']}, bridge {commits['bridge']}, "
        "not your checkout"
    ) in first
    assert "catalog_drift" not in out  # the README example fits upstream
    assert "$ git -C '$NEMO_RL_REPO' status --short" in out
    # only the Bridge given: the verl steps resolve on the manifest, the Bridge steps on the checkout
    rc = main(
        [
            "plan",
            "--framework",
            "verl",
            "--bridge-repo",
            bridge,
            "--json",
            "--override",
            "trainer.total_training_step=3",
        ]
    )
    captured = capsys.readouterr()
    plan = json.loads(captured.out)
    assert rc == 0 and f"manifest of verl {commits['verl']}, not your checkout" in plan["warnings"][0]
    drift = plan["drift"]
    assert [d["item"] for d in drift if d["origin"] == "user"] == ["trainer.total_training_step=3"]
    assert any(d["closest"] == "trainer.total_training_steps" for d in drift)
    assert any(
        d["step"] == "bridge-checks" and d["kind"] == "missing_path" for d in drift
    )  # empty Bridge checkout
    # a run (build_plan without the fallback) and a checkout given but missing stay errors
    with pytest.raises(SpecError, match="--repo is required for nemo-rl"):
        build_plan(RunSpec(framework="nemo-rl", bridge_repo=bridge))
    with pytest.raises(SpecError, match="--bridge-repo is required for verl"):
        build_plan(RunSpec(framework="verl", repo=verl))
    rc, err = _cli(["--framework", "nemo-rl", "--repo", nemo + "-missing"], capsys)
    assert rc == 2 and "no such directory" in err
