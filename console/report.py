"""The summary report of a run, in the procedures' "Summary Format" (markdown and JSON).

``render_json(run_dir)`` gives the data; ``render_markdown(run_dir)`` the text block the procedures
prescribe (Result, Requested coverage, Model, Deliverables, Evidence, Limitations, Follow-ups);
``write_report(run_dir)`` writes ``report.md`` and ``report.json`` into the run folder. Every string
passes through ``console.redact`` (on the data, before it is serialized) before it is shown or written.

A finished run's verdict is the one recorded at its end (``triage.json``, the same as ``state.json``);
``render_json(run_dir, recompute=True)`` (``report --recompute``) computes it again from the run folder.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from console.commandtext import command_line, remedy_text
from console.fileio import read_json, write_text_atomic
from console.redact import redact_obj, redact_text
from console.rundir.state import is_finished, read_state
from console.triage.verdict import FRAMEWORK_LABELS, RUN_LABELS, run_verdict

REPO_LABELS = {"nemo-rl": "NeMo-RL repo", "verl": "verl repo"}
MAX_DIRTY = 20


def _log_text(run_dir: Path, rel: str | None, limit: int = 64 << 10) -> str:
    if not rel:
        return ""
    try:
        with open(run_dir / rel, "rb") as fh:
            return fh.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _repo_state(
    run_dir: Path,
    plan_steps: list[dict[str, Any]],
    verdict: dict[str, Any],
    repo_path: str | None,
    which: str,
) -> str | None:
    """'<commit> plus dirty files: a, b' from the plan's git rev-parse / git status steps."""
    commit, dirty, seen = None, None, False
    for s in plan_steps:
        argv = [str(a) for a in s.get("argv") or []]
        if not argv or argv[0] != "git" or "-C" not in argv:
            continue
        target = argv[argv.index("-C") + 1] if argv.index("-C") + 1 < len(argv) else ""
        if not ("{" + which + "}" in target or (repo_path and target == repo_path)):
            continue
        seen = True
        log = (verdict["steps"].get(s.get("name") or "") or {}).get("log")
        out = [ln for ln in _log_text(run_dir, log).splitlines() if ln.strip()]
        if "rev-parse" in argv and out:
            commit = out[-1].strip()
        elif "status" in argv and log:
            dirty = [
                ln[3:].strip() if len(ln) > 3 else ln.strip()
                for ln in out
                if len(ln) > 2 and ln[:2].strip() in ("M", "A", "D", "R", "C", "U", "??", "MM", "AM")
            ]
    if not seen and not repo_path:
        return None
    head = commit or "commit not recorded"
    if dirty is None:
        tail = "dirty files not recorded"
    elif not dirty:
        tail = "no dirty files"
    else:
        more = f" (+{len(dirty) - MAX_DIRTY} more)" if len(dirty) > MAX_DIRTY else ""
        tail = "dirty files: " + ", ".join(dirty[:MAX_DIRTY]) + more
    where = f" ({repo_path})" if repo_path else ""
    return f"{head}{where} plus {tail}"


# a step's evidence key -> how its key line reads
KEY_LINE_FORMATS = {
    "megatron_cfg": "policy.megatron_cfg.enabled={}",
    "vanilla_mbridge": "VANILLA_MBRIDGE={}",
    "bridge_path": "megatron.bridge.__file__ = {}",
    "complete": "{}",
    "global_step": "training/global_step:{}",
}


def _key_lines(v: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for name, st in v["steps"].items():
        ev = st.get("evidence") or {}
        lines += [f"{form.format(ev[k])} ({name})" for k, form in KEY_LINE_FORMATS.items() if ev.get(k)]
    for d in v["deliverables"]:
        if d["name"].endswith("capture") and "metrics:" in d["detail"]:
            lines.append(d["detail"])
    p = v.get("primary")
    if p:
        loc = f"{p.get('file', p.get('step', ''))}:{p.get('line')}"
        lines.append(f"first relevant error ({p.get('class')}, {loc}): {p.get('evidence')}")
    return list(dict.fromkeys(lines)) or ["none recorded"]


def _result_sentence(v: dict[str, Any], spec: dict[str, Any], framework: str) -> str:
    label = RUN_LABELS.get(framework, "framework run")
    levels = "/".join(str(x) for x in spec.get("levels") or []) or "0"
    p = v.get("primary") or {}
    verdict = v["verdict"]
    if verdict == "Pass":
        return f"{label} at Level {levels} met every pass criterion of the requested coverage."
    if verdict == "Blocked":
        return (
            f"{label} at Level {levels} was blocked by the environment ({p.get('class', 'setup')}); "
            "this is not evidence against the Bridge provider."
        )
    if verdict == "Fail":
        what = p.get("class") or next(
            (d["name"] for d in v["deliverables"] if d["status"] == "Fail"), "a deliverable"
        )
        return f"{label} at Level {levels} failed ({what})."
    if verdict == "Cancelled":
        return f"{label} at Level {levels} was cancelled before the deliverables were decided."
    if v.get("reason"):
        return f"{label} at Level {levels} ended without a decision ({v['reason']}): incomplete."
    return f"{label} at Level {levels} has not produced a decision yet (incomplete)."


def _preflight_line(doctor: dict[str, Any]) -> str:
    """``doctor.json`` in one line: its verdict and every check that was not ok."""
    if not doctor.get("verdict"):
        return ""
    bad = [
        f"{c.get('id')} {c.get('status')} ({str(c.get('evidence') or '').splitlines()[0][:120]})"
        for c in doctor.get("checks") or []
        if c.get("status") != "ok"
    ]
    return str(doctor["verdict"]) + (": " + "; ".join(bad) if bad else ": every check ok")


def _interpreter_line(doctor: dict[str, Any]) -> str:
    """The run's own interpreter and its package versions, as the preflight probed them (doctor.json)."""
    it = doctor.get("interpreter") if isinstance(doctor, dict) else None
    if not isinstance(it, dict):
        return ""
    command = command_line([str(a) for a in it.get("command") or []])
    if not it.get("executable"):
        return f"`{command}` not probed ({it.get('problem') or it.get('status')})"
    versions = ", ".join(f"{k} {v or 'not installed'}" for k, v in (it.get("packages") or {}).items())
    return f"`{command}` -> {it['executable']} (Python {it.get('python')}): {versions}"


def _rerun_line(extra: dict[str, Any]) -> str:
    """What a rerun-with-fix changed, so the report records the remedy that was applied."""
    if not extra.get("linked_from"):
        return ""
    remedy = extra.get("remedy") or {}
    what = f" for {remedy['class']}" if remedy.get("class") else ""
    return f"of run {extra['linked_from']} with the remedy{what} applied: " + (
        remedy_text(remedy) or "no env or override change"
    )


def _state(run_dir: Path) -> Mapping[str, Any]:
    """``state.json`` as it is (callers settle a run whose supervisor is lost before they ask for
    its report: ``console.runs.recover.current_state``); {} when unreadable."""
    try:
        return read_state(run_dir)
    except (OSError, ValueError):
        return {}


RECORDED_KEYS = ("verdict", "deliverables", "limitations", "follow_ups", "steps", "framework")


def recorded_verdict(run_dir: Path) -> dict[str, Any] | None:
    """The verdict recorded at the run's end (``triage.json``), or None while the run is live or
    when the run predates recorded verdicts."""
    state = _state(run_dir)
    if not is_finished(state):
        return None
    triage = read_json(run_dir / "triage.json", None)
    if not isinstance(triage, dict) or not all(k in triage for k in RECORDED_KEYS):
        return None
    if state.get("verdict"):
        triage["verdict"] = state["verdict"]  # state.json is the record; triage.json agrees with it
    return triage


def render_json(
    run_dir: Path, recompute: bool = False, verdict: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The report data. ``verdict``: the run's verdict dict when the caller holds it (the run's end);
    else the recorded one of a finished run, or (``recompute``, or a live run) ``run_verdict``."""
    run_dir = Path(run_dir)
    v = verdict if verdict is not None else (None if recompute else recorded_verdict(run_dir))
    if v is None:
        v = dict(run_verdict(run_dir))
        state = _state(run_dir)
        if is_finished(state) and state.get("verdict"):
            v["verdict"] = state["verdict"]
    spec = read_json(run_dir / "spec.json", {}) or {}
    plan = read_json(run_dir / "plan.json", {}) or {}
    framework = v["framework"]
    plan_steps = plan.get("steps") or []
    variants = list(spec.get("variants") or [])
    levels = spec.get("levels") or []
    coverage = f"Level {'/'.join(str(x) for x in levels) or '0'}" + (
        f"; variants: {', '.join(variants)}" if variants else "; no variants requested"
    )
    if framework == "demo":
        model = spec.get("model") or "demo toy policy (console.demo)"
    else:
        model = spec.get("model") or "the wrapper's default model (see the command)"
    commands = [command_line(s, run_dir) for s in plan_steps if s.get("kind") == "train"]
    evidence: dict[str, Any] = {"commands": commands, "key_lines": _key_lines(v)}
    if framework != "demo":
        evidence["bridge_repo"] = _repo_state(run_dir, plan_steps, v, spec.get("bridge_repo"), "bridge")
        evidence["repo"] = _repo_state(run_dir, plan_steps, v, spec.get("repo"), "repo")
    doctor = read_json(run_dir / "doctor.json", {}) or {}
    extra = spec.get("extra") or {}
    override = extra.get("preflight_override")
    optional = {
        "preflight": _preflight_line(doctor),
        "interpreter": _interpreter_line(doctor),
        "started_anyway": override
        and "started anyway by the user although the preflight blocked it ("
        + (", ".join(override.get("checks") or []) or "blocking checks")
        + ")",
        "rerun_of": _rerun_line(extra),
    }
    evidence |= {k: line for k, line in optional.items() if line}
    if framework != "demo":
        from console.doctor.drift import verified_line  # upstream commits the catalog was checked on

        evidence["upstream"] = verified_line(framework, spec.get("repo"), spec.get("bridge_repo"))
    # where the catalog follows upstream over the written procedure (catalog `note`), and drift it knew of
    notes = list(dict.fromkeys(n for s in plan_steps for n in (s.get("notes") or [])))
    notes += [f"catalog_drift: {d.get('message')}" for d in plan.get("drift") or [] if isinstance(d, dict)]
    comparison = (read_json(run_dir / "compare.json", {}) or {}).get("report_lines")  # run --baseline
    out = {
        "run": run_dir.name,
        "result": v["verdict"],
        "summary": _result_sentence(v, spec, framework),
        "requested_coverage": coverage,
        "model": model,
        "framework": framework,
        "deliverables": v["deliverables"],
        "evidence": evidence,
        "limitations": [*(v["limitations"] or []), *notes] or ["none noted"],
        "follow_ups": v["follow_ups"],
        "primary": v.get("primary"),
    }
    if comparison:
        out["baseline_comparison"] = [str(x) for x in comparison]
    if v.get("reason"):
        out["reason"] = v["reason"]
    redacted: dict[str, Any] = redact_obj(out)
    return redacted


# the optional evidence lines of the markdown, in their order
EVIDENCE_LABELS = {
    "rerun_of": "Rerun",
    "preflight": "Preflight (rl-console doctor)",
    "upstream": "Upstream",
    "interpreter": "Run interpreter",
    "started_anyway": "Start anyway",
}


def _listed(label: str, items: list[str]) -> list[str]:
    """``- label: item`` for one item, else ``- label:`` with the items below it."""
    if len(items) == 1:
        return [f"- {label}: {items[0]}"]
    return [f"- {label}:"] + [f"  - {x}" for x in items]


def render_markdown(run_dir: Path, data: dict[str, Any] | None = None) -> str:
    """The summary text; ``data`` is a ``render_json`` result to reuse (saves a second scan)."""
    r = data if data is not None else render_json(Path(run_dir))
    fw = r["framework"]
    lines = [
        f"Result: {r['result']} - {r['summary']}",
        f"Requested coverage: {r['requested_coverage']}",
        f"Model: {r['model']}",
        "",
        "Deliverables:",
    ]
    lines += [f"- {d['name']}: {d['status']} - {d['detail']}" for d in r["deliverables"]]
    lines += ["", "Evidence:"]
    ev = r["evidence"]
    if fw != "demo":
        lines.append(f"- Bridge repo: {ev.get('bridge_repo') or 'not recorded'}")
        lines.append(
            f"- {REPO_LABELS.get(fw, FRAMEWORK_LABELS.get(fw, fw) + ' repo')}: {ev.get('repo') or 'not recorded'}"
        )
    lines += [f"- {label}: {ev[k]}" for k, label in EVIDENCE_LABELS.items() if ev.get(k)]
    lines += _listed("Command", ev.get("commands") or ["none"])
    lines += _listed("Key lines", ev.get("key_lines") or [])
    if r.get("baseline_comparison"):
        lines += ["", "Baseline comparison:"] + [f"- {x}" for x in r["baseline_comparison"]]
    lines += ["", "Limitations:"] + [f"- {x}" for x in r["limitations"]]
    lines += ["", "Follow-ups:"] + [f"- {x}" for x in r["follow_ups"]]
    return redact_text("\n".join(lines) + "\n")


def write_report(run_dir: Path, data: dict[str, Any] | None = None) -> tuple[Path, Path]:
    """Write report.md and report.json (tmp + rename) and return their paths."""
    run_dir = Path(run_dir)
    data = data if data is not None else render_json(run_dir)
    md, js = run_dir / "report.md", run_dir / "report.json"
    for path, text in ((md, render_markdown(run_dir, data)), (js, json.dumps(data, indent=2) + "\n")):
        write_text_atomic(path, text)
    return md, js
