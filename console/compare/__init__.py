"""Baseline vs candidate: did a Bridge change move the numbers? (headless; no Textual here)

``compare_runs(baseline_dir, candidate_dir, tolerances=[...], last_k=None) -> dict`` reads both run
folders and returns the comparison (the ``compare --json`` document, its keys built below), with
tolerances from ``console/catalog/compare.toml`` (``console.compare.tolerances``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from console.compare.judge import align, closeness, decide, gpu_rows, metric_row, pick_tags, timing_row
from console.compare.provenance import differences, read_facts
from console.compare.series import load_series
from console.compare.tolerances import apply_overrides, guess_framework, known_frameworks, load_rules
from console.errors import SpecError

COMPARE_JSON = "compare.json"
VERDICT_EXIT = {"Same": 0, "Changed": 1, "Inconclusive": 3}


def compare_runs(
    baseline: Path,
    candidate: Path,
    tolerances: list[tuple[str, float, float | None]] | None = None,
    last_k: int | None = None,
) -> dict[str, Any]:
    baseline, candidate = Path(baseline).resolve(), Path(candidate).resolve()
    if baseline == candidate:
        raise SpecError(f"baseline and candidate are the same run ({baseline.name})")
    if last_k is not None and last_k < 1:
        raise SpecError("--last-k must be >= 1")
    sa, sb = load_series(baseline), load_series(candidate)
    rules = load_rules("nemo-rl")
    fb = read_facts(baseline, sa, rules)
    fc = read_facts(candidate, sb, rules)
    framework = next((f for f in (fc.framework, fb.framework) if f in known_frameworks()), None)
    framework = framework or guess_framework(sa.tags & sb.tags)
    rules = apply_overrides(load_rules(framework), tolerances or [], sa.tags & sb.tags)
    k = last_k or rules.last_k
    diffs = differences(fb, fc, rules)
    across_seeds = any(d["kind"] == "seed" for d in diffs)
    rows, curves = [], {}
    lengths: list[tuple[int, int]] = []
    for rule in rules.metrics.values():
        tags = pick_tags(rule.names, sa, sb)
        if tags is None:
            continue
        al = align(tags, sa, sb)
        rows.append(metric_row(rule, al, k, across_seeds))
        lengths.append((len(sa.curves[tags[0]]), len(sb.curves[tags[1]])))
        curves[rule.key] = {"metric": al.name, "steps": al.steps, "baseline": al.base, "candidate": al.cand}
    picked = [(t, pick_tags(t.names, sa, sb)) for t in rules.timing.values()]
    timing = [timing_row(t, align(tags, sa, sb), rules, k) for t, tags in picked if tags is not None]
    common = max(
        (r["steps"] for r in rows if r["judged"]), default=max((r["steps"] for r in rows), default=0)
    )
    verdict, reasons = decide(rows, diffs, common, rules, fb, fc)
    steps_b = max((n for n, _ in lengths), default=0)
    steps_c = max((n for _, n in lengths), default=0)
    notes = []
    if steps_b != steps_c:
        notes.append(
            f"the baseline has {steps_b} steps, the candidate {steps_c}: compared on the "
            f"{common} steps both have"
        )
    if any(d["field"] == "hardware" for d in diffs):
        notes.append("the runs ran on different hardware: timing and memory are not comparable")
    for facts, role in ((fb, "baseline"), (fc, "candidate")):
        if facts.status in ("pending", "running"):
            notes.append(f"the {role} run is still running: compared on the steps logged so far")
        elif facts.verdict == "Fail":
            notes.append(f"the {role} run's own verdict is Fail")
    return {
        "verdict": verdict,
        "reasons": reasons,
        "notes": notes,
        "framework": framework,
        "last_k": k,
        "common_steps": common,
        "baseline": {**fb.to_dict(), "steps": steps_b, "source": sa.source},
        "candidate": {**fc.to_dict(), "steps": steps_c, "source": sb.source},
        "metrics": rows,
        "match": closeness(rows),
        "timing": timing,
        "timing_regressions": [t["label"] for t in timing if t["regression"]],
        "gpu": gpu_rows(sa, sb, rules),
        "differences": diffs,
        "curves": curves,
    }
