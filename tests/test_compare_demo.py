"""`rl-console compare` on real demo runs: same seed twice (Same), planted changes (Changed from the
first diverging step), different seeds (Inconclusive or Same, as the data says), too few steps and
different configs (Inconclusive, saying which), user tolerances, --last-k, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runs_support import cli, reap_runs, wait_finished

pytestmark = [pytest.mark.timeout(400), pytest.mark.slow]
STEPS = "grpo.max_num_steps=8"
SECRET = "hf_abcdefghijklmnopqrstuvwxyz0123456789"
CASES = {
    "base": ["--override", STEPS],
    "same": ["--override", STEPS],
    "lr": ["--override", STEPS, "--variant", "lr-scale"],
    "adv": ["--override", STEPS, "--variant", "adv-mean"],
    "seed": ["--override", STEPS, "--override", "grpo.seed=7"],
    "short": ["--override", "grpo.max_num_steps=2"],
    "config": [
        "--override",
        STEPS,
        "--override",
        "grpo.num_prompts_per_step=24",
        "--env",
        f"HF_TOKEN={SECRET}",
    ],
}


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory):
    runs = tmp_path_factory.mktemp("compare") / "runs"
    dirs: dict[str, Path] = {}
    for name, extra in CASES.items():
        res = cli("run", "--framework", "demo", "--no-doctor", "--detach", "--runs-dir", str(runs), *extra)
        assert res.returncode == 0, res.stderr
        dirs[name] = Path(res.stdout.split("started: ", 1)[1].strip())
    for d in dirs.values():
        wait_finished(d, timeout=300)
    yield runs, dirs
    assert reap_runs(runs) == []


def compare(runs: Path, a: Path, b: Path, *extra: str) -> tuple[int, dict]:
    res = cli("compare", a.name, b.name, "--runs-dir", str(runs), "--json", *extra)
    assert res.returncode in (0, 1, 3), res.stderr
    return res.returncode, json.loads(res.stdout)


def rows(result: dict) -> dict[str, dict]:
    return {r["key"]: r for r in result["metrics"]}


def test_same_seed_twice_is_same_and_bit_exact(demo_runs) -> None:
    runs, d = demo_runs
    code, r = compare(runs, d["base"], d["same"])
    assert (code, r["verdict"]) == (0, "Same"), r["reasons"]
    assert r["common_steps"] == 8 and r["baseline"]["steps"] == r["candidate"]["steps"] == 8
    assert r["match"]["identical"] is True and r["match"]["max_abs_diff"] == 0
    judged = {k for k, row in rows(r).items() if row["judged"]}
    assert {"loss", "reward", "token_mult_prob_error", "grad_norm", "gen_kl_error"} <= judged
    assert all(row["first_divergence"] is None and row["delta"] == 0 for row in r["metrics"])
    assert [x for x in r["differences"] if x["kind"] in ("config", "seed", "code")] == []
    labels = {t["label"] for t in r["timing"]}
    assert {"step time (s)", "tokens/s/GPU", "generation (s)", "refit (s)"} <= labels
    # the text view says the same
    res = cli("compare", d["base"].name, d["same"].name, "--runs-dir", str(runs))
    assert res.returncode == 0 and "Verdict: Same" in res.stdout and "identical" in res.stdout


def test_planted_lr_scale_is_changed_from_the_first_diverging_step(demo_runs) -> None:
    runs, d = demo_runs
    code, r = compare(runs, d["base"], d["lr"])
    assert (code, r["verdict"]) == (1, "Changed"), r["reasons"]
    div = {k: row["first_divergence"] for k, row in rows(r).items() if not row["within"]}
    # step 1's loss already holds the second minibatch, trained after the first (doubled) update;
    # step 1's reward is sampled before any update: it can only move from step 2 on
    assert div["loss"] == 1 and div["lr"] == 1
    assert div["reward"] >= 2 and rows(r)["reward"]["max_abs_diff"] > 0
    first = min(div.values())
    assert f"from step {first}" in r["reasons"][0]
    assert r["match"]["identical"] is False
    assert {
        "field": "variants (planted change)",
        "baseline": "-",
        "candidate": "lr-scale",
        "kind": "code",
    } in r["differences"]


def test_planted_advantage_normalisation_is_changed(demo_runs) -> None:
    runs, d = demo_runs
    code, r = compare(runs, d["base"], d["adv"])
    assert (code, r["verdict"]) == (1, "Changed"), r["reasons"]
    moved = [k for k, row in rows(r).items() if not row["within"]]
    assert "loss" in moved and "lr" not in moved  # same learning rate: the update rule moved


def test_different_seeds_as_the_data_says(demo_runs) -> None:
    runs, d = demo_runs
    code, r = compare(runs, d["base"], d["seed"])
    assert r["verdict"] in ("Same", "Inconclusive") and code in (0, 3)
    assert "different seeds (default vs grpo.seed=7)" in r["reasons"][0]
    reward = rows(r)["reward"]
    assert reward["basis"] == "last-k mean across seeds" and reward["judged"]
    # the verdict follows the reward tolerance across seeds: Same exactly when the means agree
    assert (r["verdict"] == "Same") == all(row["within"] for row in r["metrics"] if row["judged"])
    # loss is not judged across seeds (it is only comparable step by step with equal seeds)
    assert rows(r)["loss"]["judged"] is False
    # a looser reward tolerance of the user's makes the same data Same
    code, loose = compare(
        runs,
        d["base"],
        d["seed"],
        "--tolerance",
        "reward=1.0,1.0",
        "--tolerance",
        "token_mult_prob_error=1,1",
        "--tolerance",
        "gen_kl_error=1,1",
        "--tolerance",
        "lr=1,1",
        "--tolerance",
        "kl=1,1",
        "--tolerance",
        "grad_norm=1,1",
        "--tolerance",
        "loss=1,1",
    )
    assert (code, loose["verdict"]) == (0, "Same"), loose["reasons"]
    assert rows(loose)["reward"]["tolerance"] == {"rel": 1.0, "abs": 1.0, "user": True}


def test_too_few_steps_is_inconclusive(demo_runs) -> None:
    runs, d = demo_runs
    code, r = compare(runs, d["base"], d["short"])
    assert (code, r["verdict"]) == (3, "Inconclusive")
    assert any("too few steps: 2 common training step(s), 3 needed" in x for x in r["reasons"])
    assert any("the baseline has 8 steps, the candidate 2" in n for n in r["notes"])


def test_different_config_is_inconclusive_and_named(demo_runs) -> None:
    runs, d = demo_runs
    code, r = compare(runs, d["base"], d["config"])
    assert (code, r["verdict"]) == (3, "Inconclusive")
    assert "override grpo.num_prompts_per_step: (not set) vs 24" in r["reasons"][0]
    # the step count is an ignored override: it never makes runs incomparable on its own
    assert not any("max_num_steps" in x for x in r["reasons"])
    # env differences are named, secrets never shown
    assert {"field": "env HF_TOKEN", "baseline": "(not set)", "candidate": "***", "kind": "config"} in r[
        "differences"
    ]
    for args in (["--json"], []):
        res = cli("compare", d["base"].name, d["config"].name, "--runs-dir", str(runs), *args)
        assert SECRET not in res.stdout + res.stderr


def test_last_k_and_bad_input(demo_runs) -> None:
    runs, d = demo_runs
    _, r = compare(runs, d["base"], d["lr"], "--last-k", "2")
    assert r["last_k"] == 2 and all(row["last_k"] == 2 for row in r["metrics"])
    for extra, msg in [
        (["--tolerance", "loss"], "expected METRIC=REL[,ABS]"),
        (["--tolerance", "loss=abc"], "must be numbers"),
        (["--tolerance", "loss=-1"], "finite and >= 0"),
        (["--tolerance", "nosuch/metric=0.1"], "no such metric"),
        (["--last-k", "0"], "--last-k must be >= 1"),
    ]:
        res = cli("compare", d["base"].name, d["lr"].name, "--runs-dir", str(runs), *extra)
        assert res.returncode == 2 and msg in res.stderr and len(res.stderr.strip().splitlines()) == 1, extra
    res = cli("compare", d["base"].name, "no-such-run", "--runs-dir", str(runs))
    assert res.returncode == 2 and "no run 'no-such-run'" in res.stderr
    res = cli("compare", d["base"].name, d["base"].name, "--runs-dir", str(runs))
    assert res.returncode == 2 and "the same run" in res.stderr
