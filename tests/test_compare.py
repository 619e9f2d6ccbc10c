"""The comparison rules on their own (fast): tolerances with their absolute floor, NaN handling, the
first diverging step, the verdict's branches, the catalog, tag aliases and the peer pick."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from console.compare import judge
from console.compare.pick import pair_with_latest_peer
from console.compare.provenance import RunFacts
from console.compare.series import RunSeries, load_series
from console.compare.tolerances import (
    MetricRule,
    apply_overrides,
    guess_framework,
    known_frameworks,
    load_rules,
    parse_tolerance,
)
from console.errors import SpecError


def series(**curves: list[float]) -> RunSeries:
    return RunSeries(curves={k: {i + 1: v for i, v in enumerate(vals)} for k, vals in curves.items()})


def facts(**kw) -> RunFacts:
    return RunFacts(id=kw.pop("id", "r"), path="/x", framework="demo", **kw)


def test_catalog_loads_every_framework_with_tight_loss_and_looser_reward() -> None:
    assert set(known_frameworks()) == {"demo", "nemo-rl", "verl"}
    for fw in known_frameworks():
        rules = load_rules(fw)
        reward = rules.metrics["reward"]
        assert reward.judge and reward.seed_rel is not None  # judged across seeds too
        loss = rules.metrics.get("loss") or rules.metrics["pg_loss"]
        assert loss.rel < reward.rel and loss.seed_rel is None  # tight, and only step by step
        assert {"step_time", "tokens_per_s", "generation", "refit"} <= set(rules.timing)
    demo = load_rules("demo")
    assert demo.metrics["token_mult_prob_error"] == load_rules("nemo-rl").metrics["token_mult_prob_error"]
    assert demo.metrics["kl"].judge and not load_rules("nemo-rl").metrics["kl"].judge


def test_tolerance_has_an_absolute_floor_for_near_zero_values() -> None:
    rule = MetricRule("x", ("x",), rel=0.01, abs=1e-3)
    assert rule.tolerance(100.0) == pytest.approx(1.0)
    assert rule.tolerance(0.0) == 1e-3 and rule.tolerance(-1e-6) == 1e-3
    assert rule.tolerance(5.0, across_seeds=True) is None  # not judged across seeds


def test_parse_and_apply_user_tolerances() -> None:
    assert parse_tolerance("loss=0.05") == ("loss", 0.05, None)
    assert parse_tolerance("train/reward=0.1,0.02") == ("train/reward", 0.1, 0.02)
    for bad in ("loss", "=0.1", "loss=a", "loss=1,2,3", "loss=nan", "loss=-0.1"):
        with pytest.raises(SpecError):
            parse_tolerance(bad)
    rules = load_rules("nemo-rl")
    out = apply_overrides(rules, [("train/loss", 0.5, None), ("train/custom", 0.1, 0.01)], {"train/custom"})
    assert out.metrics["loss"].rel == 0.5 and out.metrics["loss"].abs == rules.metrics["loss"].abs
    assert out.metrics["loss"].overridden and out.metrics["train/custom"].judge
    with pytest.raises(SpecError, match="no such metric"):
        apply_overrides(rules, [("nope", 0.1, None)], set())


def test_first_divergence_nan_and_closeness() -> None:
    rule = MetricRule("loss", ("loss",), rel=0.02, abs=1e-3)
    a = series(loss=[0.5, 0.4, 0.3, 0.2, float("nan")])
    b = series(loss=[0.5, 0.4005, 0.33, 0.2, 0.1])
    row = judge.metric_row(rule, judge.align(("loss", "loss"), a, b), last_k=2, across_seeds=False)
    assert row["first_divergence"] == 3 and not row["within"]  # 0.4005 is within max(1e-3, 0.008)
    assert row["max_abs_diff"] == "inf" and row["baseline_mean"] == "nan"
    same = judge.metric_row(rule, judge.align(("loss", "loss"), a, a), last_k=2, across_seeds=False)
    assert same["within"] and same["max_abs_diff"] == 0  # NaN equals NaN at the same step
    m = judge.closeness([row, same])
    assert m["max_abs_metric"] == "loss" and m["identical"] is False


def test_aliases_align_a_finished_run_with_a_live_one() -> None:
    finished = series(**{"train/loss": [0.5, 0.4, 0.3]})
    live = series(loss=[0.5, 0.4])
    tags = judge.pick_tags(("train/loss", "loss"), finished, live)
    assert tags == ("train/loss", "loss")
    al = judge.align(tags, finished, live)
    assert al.steps == [1, 2] and al.name == "train/loss | loss"


def test_verdict_branches() -> None:
    rules = load_rules("demo")
    ok = {"key": "loss", "judged": True, "within": True, "first_divergence": None, "steps": 8}
    moved = {"key": "reward", "judged": True, "within": False, "first_divergence": 3, "steps": 8}
    f = facts()
    assert judge.decide([ok], [], 8, rules, f, f)[0] == "Same"
    verdict, why = judge.decide([ok, moved], [], 8, rules, f, f)
    assert verdict == "Changed" and why == ["beyond tolerance: reward from step 3"]
    verdict, why = judge.decide([ok], [], 2, rules, f, f)
    assert verdict == "Inconclusive" and "too few steps: 2" in why[0]
    cfg = [{"field": "override a.b", "baseline": "1", "candidate": "2", "kind": "config"}]
    verdict, why = judge.decide([ok, moved], cfg, 8, rules, f, f)
    assert verdict == "Inconclusive" and "different configs (override a.b: 1 vs 2)" in why[0]
    seed = [{"field": "seed", "baseline": "default", "candidate": "grpo.seed=7", "kind": "seed"}]
    assert judge.decide([ok], seed, 8, rules, f, f)[0] == "Same"
    verdict, why = judge.decide([ok, moved], seed, 8, rules, f, f)
    assert verdict == "Inconclusive" and "different seeds" in why[0]
    code = [{"field": "Bridge", "baseline": "a", "candidate": "b", "kind": "code"}]
    assert judge.decide([ok, moved], code, 8, rules, f, f)[0] == "Changed"  # the change under test
    blocked = facts(verdict="Blocked")
    verdict, why = judge.decide([ok], [], 8, rules, blocked, f)
    assert verdict == "Inconclusive" and "baseline run is Blocked" in why[0]


def test_timing_regression_needs_both_thresholds() -> None:
    rules = load_rules("nemo-rl")
    rule = rules.timing["step_time"]
    slow = judge.timing_row(
        rule, judge.align(("t", "t"), series(t=[10.0] * 5), series(t=[12.0] * 5)), rules, 5
    )
    assert slow["regression"] and slow["rel_delta"] == pytest.approx(0.2)
    tiny = judge.timing_row(
        rule, judge.align(("t", "t"), series(t=[0.1] * 5), series(t=[0.13] * 5)), rules, 5
    )
    assert not tiny["regression"]  # +30% but 0.03 s: noise
    tput = rules.timing["tokens_per_s"]
    fewer = judge.timing_row(
        tput, judge.align(("t", "t"), series(t=[1000.0] * 5), series(t=[800.0] * 5)), rules, 5
    )
    assert fewer["regression"]  # throughput: higher is better


def test_guess_framework_for_unknown_replays() -> None:
    assert guess_framework({"actor/pg_loss", "critic/score/mean", "timing_s/step"}) == "verl"
    assert guess_framework({"loss", "reward", "step_time_s"}) == "nemo-rl"
    assert math.isfinite(load_rules("verl").regress_rel)


def write_run(
    runs: Path, name: str, created: float, framework: str = "demo", model: str | None = None
) -> Path:
    d = runs / name
    d.mkdir(parents=True)
    (d / "spec.json").write_text(json.dumps({"framework": framework, "levels": [0], "model": model}))
    (d / "state.json").write_text(json.dumps({"id": name, "created": created, "status": "passed"}))
    return d


def test_latest_peer_is_of_the_same_framework_levels_and_model(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    a = write_run(runs, "20260101-000000-demo-l0", 1.0)
    b = write_run(runs, "20260101-000100-demo-l0", 2.0)
    c = write_run(runs, "20260101-000200-demo-l0", 3.0, model="org/other")
    write_run(runs, "20260101-000300-verl-l0", 4.0, framework="verl")
    assert pair_with_latest_peer(runs, b) == (a.resolve(), b.resolve())
    assert pair_with_latest_peer(runs, a) == (a.resolve(), b.resolve())  # the older run is the baseline
    assert pair_with_latest_peer(runs, c) is None


def test_series_reads_metrics_json_then_log_events_and_gpu_peaks(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    (d / "state.json").write_text("{}")
    (d / "metrics.json").write_text(json.dumps({"train/loss": {"1": 0.5, "2": "NaN"}}))
    lines = [
        {"t": 1, "type": "metrics", "step": 1, "plan_step": "s", "values": {"loss": 0.5, "reward": 0.25}},
        {
            "t": 2,
            "type": "gpu",
            "step": "s",
            "devices": [{"index": 0, "name": "H100", "mem_used": 5, "mem_total": 9}],
        },
        {
            "t": 3,
            "type": "gpu",
            "step": "s",
            "devices": [{"index": 0, "name": "H100", "mem_used": 7, "mem_total": 9}],
        },
        {"t": 4, "type": "finding", "step": "s", "class": "nccl", "evidence": "metrics gpu host"},
    ]
    (d / "events.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + '\n{"type": "gpu", partial')
    s = load_series(d)
    assert s.source == "metrics.json + log"
    assert s.curves["train/loss"][1] == 0.5 and math.isnan(s.curves["train/loss"][2])
    assert "loss" not in s.curves and s.curves["reward"] == {1: 0.25}  # metrics.json's own tag wins
    assert s.gpu["0"].peak_bytes == 7 and s.gpu["0"].name == "H100"


def test_gpu_peaks_from_nemo_rl_ray_metrics_when_no_samples(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    (d / "metrics.json").write_text(
        json.dumps(
            {
                "ray/node.0.gpu.1.mem_gb": {"0": 10.0, "10": 31.5, "20": 30.0},
                "ray/node.0.gpu.1.util": {"0": 97.0},
            }
        )
    )
    s = load_series(d)
    assert list(s.gpu) == ["node0.1"] and s.gpu["node0.1"].peak_bytes == 31.5 * 1024**3


def test_facts_read_commits_from_the_plans_git_steps_and_differences_class_them(tmp_path: Path) -> None:
    from console.compare.provenance import differences, read_facts

    def run(name: str, sha: str, dirty: str, seed: str | None, env: dict[str, str]) -> Path:
        d = tmp_path / name
        (d / "logs").mkdir(parents=True)
        steps = [
            {
                "name": "bridge-status",
                "argv": ["git", "-C", "/src/bridge", "status", "--short"],
                "kind": "setup",
            },
            {
                "name": "bridge-commit",
                "argv": ["git", "-C", "/src/bridge", "rev-parse", "--short", "HEAD"],
                "kind": "setup",
            },
            {"name": "l0", "argv": ["bash", "x.sh"], "kind": "train", "env": env},
        ]
        (d / "plan.json").write_text(json.dumps({"steps": steps}))
        overrides = ["grpo.max_num_steps=3", "logger.log_dir=/x/" + name] + (
            [f"grpo.seed={seed}"] if seed else []
        )
        (d / "spec.json").write_text(
            json.dumps(
                {
                    "framework": "nemo-rl",
                    "levels": [0],
                    "bridge_repo": "/src/bridge",
                    "overrides": overrides,
                    "env": {},
                }
            )
        )
        (d / "state.json").write_text(
            json.dumps(
                {
                    "steps": [
                        {"name": s["name"], "log": f"logs/0{i + 1}-{s['name']}.log"}
                        for i, s in enumerate(steps)
                    ]
                }
            )
        )
        (d / "logs/01-bridge-status.log").write_text(dirty)
        (d / "logs/02-bridge-commit.log").write_text(sha + "\n")
        return d

    rules = load_rules("nemo-rl")
    a = read_facts(run("a", "abc1234", "", None, {"NRL_X": "1"}), None, rules)
    b = read_facts(
        run(
            "b",
            "def5678",
            " M src/megatron/bridge/models/x.py\n",
            "7",
            {"NRL_X": "2", "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz0123"},
        ),
        None,
        rules,
    )
    assert a.bridge == "abc1234 (/src/bridge) plus no dirty files"
    assert b.bridge == "def5678 (/src/bridge) plus dirty files: src/megatron/bridge/models/x.py"
    assert (a.seed, b.seed) == ("default", "grpo.seed=7")
    kinds = {d["field"]: d["kind"] for d in differences(a, b, rules)}
    assert kinds == {
        "seed": "seed",
        "override logger.log_dir": "info",
        "env HF_TOKEN": "config",
        "env NRL_X": "config",
        "Bridge": "code",
    }
    assert b.env["HF_TOKEN"] == "***"
