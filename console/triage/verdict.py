"""Verdict per deliverable for a run folder, by the procedures' pass criteria and summary rules.

``run_verdict(run_dir)`` reads ``spec.json``, ``plan.json``, ``state.json``, ``doctor.json``,
``logs/*.log``, ``metrics.json`` and ``events.jsonl`` (console/CONTRACTS.md) and returns::

    {"verdict": "Pass|Fail|Blocked|Incomplete|Cancelled",
     "deliverables": [{"name": "Bridge-side checks", "status": "Pass|Fail|Blocked|Skipped|Not requested",
                       "detail": "..."}, ...],
     "primary": {...} | None, "limitations": [...], "follow_ups": [...],
     # the run-wide triage JSON of DESIGN.md as well (the supervisor writes this dict as triage.json):
     "framework": "...", "findings": [...], "progress": {...},
     "steps": {step name: {"status", "exit_code", "verdict", "primary", "progress", "evidence"}}}

Overall: Cancelled when the run was cancelled; Blocked when the first failure is an environment
failure (before provider construction: Blocked-class primary, or a wrong/missing Bridge import);
Fail when a requested deliverable failed; Pass only when every requested deliverable passed;
Incomplete otherwise (still running, or steps skipped without a failure).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from console.catalog import load_toml
from console.commandtext import command_line, remedy_text
from console.events import iter_events
from console.fileio import read_json
from console.rundir.paths import step_path
from console.triage.model import Deliverable, Progress, StepVerdict, TriageResult, Verdict
from console.triage.rules import CATALOG, default_catalog

FRAMEWORK_LABELS = {"nemo-rl": "NeMo-RL", "verl": "verl", "demo": "demo"}
RUN_LABELS = {
    "nemo-rl": "NeMo-RL Megatron policy run",
    "verl": "verl Megatron backend run",
    "demo": "Demo GRPO run",
}
FAILING = ("Fail", "Blocked")


def _check_row(evidence: str) -> str:
    """A check_metrics table row (``│ FAIL │ expr │ value │ msg │``) as ``FAIL: expr [value: v]``."""
    cells = [c.strip() for c in evidence.replace("┃", "│").split("│") if c.strip()]
    if len(cells) >= 3 and cells[0] in ("FAIL", "PASS"):
        return f"{cells[0]}: {cells[1]} [value: {cells[2]}]"
    return evidence


VENDORED_BRIDGE = "3rdparty/Megatron-Bridge-workspace/Megatron-Bridge"


# ---------------------------------------------------------------------------------------- reading


def _limitations_catalog() -> dict[str, Any]:
    data = load_toml(CATALOG)
    return {"limitations": data.get("limitation") or [], "learning_levels": data.get("learning_levels") or {}}


def _step_log(run_dir: Path, index: int, step: dict[str, Any], st: dict[str, Any]) -> Path | None:
    rel = st.get("log") or f"logs/{index + 1:02d}-{step.get('name', 'step')}.log"
    path = run_dir / rel
    return path if path.is_file() else None


def _exit_code(run_dir: Path, log: Path | None, st: dict[str, Any]) -> int | None:
    code = st.get("exit_code")
    if code is None and log is not None:
        exit_file = log.with_suffix(".exit")
        try:
            code = int(exit_file.read_text().strip())
        except (OSError, ValueError):
            code = None
    return code


def _metrics_path(run_dir: Path, plan_steps: list[dict[str, Any]]) -> Path | None:
    own = run_dir / "metrics.json"
    if own.is_file():
        return own
    for s in plan_steps:
        p = step_path(s.get("metrics_json"), s, run_dir)
        if (
            p is not None and p.is_file() and p.resolve().is_relative_to(run_dir.resolve())
        ):  # the run folder's evidence only
            return p
    return None


def nonfinite_metrics(metrics: dict[str, Any]) -> list[str]:
    """Tags of metrics.json holding NaN/Inf values (loss, reward, KL, grad norm, logprob...)."""
    bad = []
    for tag, series in metrics.items():
        if not isinstance(series, dict):
            continue
        for value in series.values():
            try:
                if not math.isfinite(float(value)):
                    bad.append(tag)
                    break
            except (TypeError, ValueError):
                continue
    return bad


# ---------------------------------------------------------------------------------------- steps


def _triage_step(
    log: Path | None, framework: str, exit_code: int | None, cancelled: bool = False
) -> tuple[TriageResult, dict[str, str]]:
    from console.triage.scan import scan_paths

    if log is None:
        return {
            "verdict": "Incomplete",
            "framework": framework,
            "primary": None,
            "findings": [],
            "progress": {"step": None, "total": None},
        }, {}
    engine = scan_paths([log], framework, final=exit_code is not None)
    if cancelled:  # the console's own cancel: Cancelled, unless a cause was already in the log
        engine.note_cancel("cancelled from the console (rl-console cancel)")
    res = engine.result(exit_code)
    ev = dict(engine.evidence)
    if engine.completed_line is not None:
        ev["completed"] = "yes"
    return res, ev


def _status_of(step_state: Mapping[str, Any]) -> str:
    return str(step_state.get("status") or "pending")


# ---------------------------------------------------------------------------------------- verdict


def run_verdict(run_dir: Path) -> Verdict:
    run_dir = Path(run_dir).resolve()
    spec = read_json(run_dir / "spec.json", {}) or {}
    plan = read_json(run_dir / "plan.json", {}) or {}
    state = read_json(run_dir / "state.json", {}) or {}
    doctor = read_json(run_dir / "doctor.json", {}) or {}
    framework = spec.get("framework") or (plan.get("spec") or {}).get("framework") or "unknown"
    plan_steps: list[dict[str, Any]] = list(plan.get("steps") or [])
    states: list[dict[str, Any]] = list(state.get("steps") or [])
    by_name = {s.get("name"): s for s in states}

    hangs = {}
    for ev in iter_events(run_dir / "events.jsonl"):
        if ev.type == "hang" and ev.step:
            hangs[ev.step] = ev.data.get("idle_s")

    steps: dict[str, StepVerdict] = {}
    primary_step: str | None = None
    primary: dict[str, Any] | None = None
    all_findings: list[dict[str, Any]] = []
    progress: Progress = {"step": None, "total": None}
    for i, step in enumerate(plan_steps):
        name = step.get("name") or f"step{i + 1}"
        st = by_name.get(name) or (states[i] if i < len(states) else {})
        status = _status_of(st)
        log = _step_log(run_dir, i, step, st)
        code = _exit_code(run_dir, log, st)
        fw = framework if step.get("kind") in ("train", "metrics") else "unknown"
        res, evidence = _triage_step(
            log,
            fw if fw in ("nemo-rl", "verl", "demo") else "unknown",
            code if status not in ("pending", "running") else None,
            cancelled=status == "cancelled",
        )
        if name in hangs and res.get("primary") is None and status in ("failed", "cancelled"):
            cat = default_catalog()
            info = cat.classes["hang"]
            res["primary"] = {
                "class": "hang",
                "verdict": info.verdict,
                "line": 0,
                "evidence": f"no progress for {hangs[name]} s",
                "advice": info.advice,
                "remedy": info.remedy.copy(),
                "title": info.title,
                "rule": "events:hang",
            }
            res["verdict"] = info.verdict
        ignored = step.get("on_failure") == "continue" or step.get("kind") == "setup"
        if status == "passed" and step.get("kind") not in ("train", "metrics"):
            res["verdict"], res["primary"] = "Pass", None  # checks: the exit code decides
        if status == "failed" and res.get("primary") is None and not ignored:
            cat = default_catalog()
            info = cat.classes["unknown_error"]
            res["primary"] = {
                "class": "unknown_error",
                "verdict": "Fail",
                "line": 0,
                "evidence": f"step exited with code {code}",
                "advice": info.advice,
                "remedy": info.remedy.copy(),
                "title": info.title,
                "rule": "step:failed",
            }
            res["verdict"] = "Fail"
        steps[name] = {
            "status": status,
            "exit_code": code,
            "verdict": res["verdict"],
            "primary": res.get("primary"),
            "progress": res.get("progress"),
            "evidence": evidence,
            "log": str(log.relative_to(run_dir)) if log else None,
            "reason": st.get("reason"),
            "findings": res.get("findings") or [],
        }
        for f in res.get("findings") or []:
            all_findings.append({**f, "file": steps[name]["log"] or name})
        if step.get("kind") == "train" and res.get("progress", {}).get("step") is not None:
            progress = res["progress"]
        found = res.get("primary")
        if primary is None and not ignored and found and res["verdict"] in FAILING:
            primary, primary_step = {**found, "step": name}, name
            if steps[name]["log"]:
                primary["file"] = steps[name]["log"]

    metrics_path = _metrics_path(run_dir, plan_steps)
    metrics = read_json(metrics_path, {}) if metrics_path else {}
    ctx = _Context(run_dir, spec, plan_steps, steps, doctor, framework, metrics_path, metrics or {})
    deliverables = [
        _bridge_checks(ctx),
        _bridge_import(ctx),
        _framework_run(ctx),
        _variants(ctx),
        _capture(ctx),
    ]
    verdict = _overall(state, deliverables, primary)
    if primary is None:
        for d in deliverables:
            if d["status"] in FAILING and d.get("primary"):
                primary = d["primary"]
                break
    for d in deliverables:
        d.pop("primary", None)
    limitations = _limitations(ctx, all_findings)
    follow_ups = _follow_ups(verdict, deliverables, primary, primary_step)
    return {
        "verdict": verdict,
        "deliverables": deliverables,
        "primary": primary,
        "limitations": limitations,
        "follow_ups": follow_ups,
        "framework": framework,
        "findings": all_findings,
        "progress": progress,
        "steps": steps,
    }


class _Context:
    def __init__(
        self,
        run_dir: Path,
        spec: dict[str, Any],
        plan_steps: list[dict[str, Any]],
        steps: Mapping[str, Mapping[str, Any]],
        doctor: dict[str, Any],
        framework: str,
        metrics_path: Path | None,
        metrics: dict[str, Any],
    ) -> None:
        self.run_dir, self.spec, self.plan_steps, self.steps = run_dir, spec, plan_steps, steps
        self.doctor, self.framework = doctor, framework
        self.metrics_path, self.metrics = metrics_path, metrics

    def of(self, deliverable: str, kind: str | None = None) -> list[tuple[dict[str, Any], Mapping[str, Any]]]:
        out = []
        for s in self.plan_steps:
            if s.get("deliverable") == deliverable and (kind is None or s.get("kind") == kind):
                out.append((s, self.steps.get(s.get("name") or "", {})))
        return out

    def check(self, check_id: str) -> dict[str, Any] | None:
        c: dict[str, Any]
        for c in self.doctor.get("checks") or []:
            if c.get("id") == check_id or c.get("name") == check_id:
                return c
        return None

    @property
    def label(self) -> str:
        return FRAMEWORK_LABELS.get(self.framework, self.framework)


def _group_status(
    items: list[tuple[dict[str, Any], Mapping[str, Any]]],
) -> tuple[str, dict[str, Any] | None, str]:
    """(status, primary, reason) of a group of steps: Fail/Blocked first, then Skipped, then Pass."""
    for _, r in items:
        if r.get("verdict") in FAILING and r.get("status") in ("failed", "passed", "cancelled"):
            if r.get("status") == "passed" and r.get("primary") is None:
                continue
            return r["verdict"], r.get("primary"), ""
        if r.get("status") == "failed":
            return "Fail", r.get("primary"), ""
    for s, r in items:
        st = r.get("status", "pending")
        if st in ("skipped", "cancelled", "pending", "running"):
            why = (
                r.get("reason")
                or {
                    "pending": "not run",
                    "running": "still running",
                    "cancelled": "cancelled",
                    "skipped": "skipped",
                }[st]
            )
            return "Skipped", None, f"{s.get('name')}: {why}"
    return "Pass", None, ""


def _bridge_checks(ctx: _Context) -> Deliverable:
    name = "Bridge-side checks"
    if ctx.framework == "demo":
        return {
            "name": name,
            "status": "Not requested",
            "detail": "demo framework: no Megatron-Bridge checkout",
        }
    items = ctx.of("bridge_checks")
    if not items:
        return {"name": name, "status": "Skipped", "detail": "not in the plan"}
    status, primary, reason = _group_status(items)
    cmds = "; ".join(command_line(s) for s, _ in items)
    detail = cmds if status == "Pass" else (reason or (primary or {}).get("evidence") or cmds)
    if status in FAILING and primary:
        detail = f"{primary.get('evidence')} ({cmds})"
    return {"name": name, "status": status, "detail": detail, "primary": primary}


def _bridge_path_ok(path: str, bridge_repo: str | None) -> bool | None:
    if not path:
        return None
    if "site-packages" in path or "dist-packages" in path:
        return False
    if bridge_repo:
        src = str(Path(bridge_repo) / "src")
        return path.startswith(src + "/") or VENDORED_BRIDGE in path
    return None


def _bridge_import(ctx: _Context) -> Deliverable:
    name = f"Local Bridge import in {ctx.label}"
    if ctx.framework == "demo":
        return {
            "name": "Local Bridge import",
            "status": "Not requested",
            "detail": "demo framework: megatron.bridge is not used",
        }
    bridge_repo = ctx.spec.get("bridge_repo")
    paths: list[str] = []
    problems: list[str] = []
    for check_id, where in (("bridge_import_driver", "driver"), ("bridge_import_ray_worker", "Ray worker")):
        c = ctx.check(check_id)
        if not c:
            continue
        ev = str(c.get("evidence") or "")
        m = re.search(r"(/\S*megatron/bridge/__init__\.py)", ev)
        if m:
            paths.append(f"{where}: {m.group(1)}")
        if c.get("status") in ("block", "fail", "Blocked", "Fail"):
            problems.append(f"{where}: {ev or c.get('advice') or 'import failed'}")
    items = ctx.of("bridge_import")
    for s, r in items:
        p = (r.get("evidence") or {}).get("bridge_path")
        if p:
            paths.append(f"{s.get('name')}: {p}")
            if _bridge_path_ok(p, bridge_repo) is False:
                problems.append(f"wrong Bridge path {p} (expected under {bridge_repo}/src)")
        elif r.get("status") == "failed":
            prim = r.get("primary") or {}
            problems.append(prim.get("evidence") or f"{s.get('name')} failed")
    for s, r in ctx.of("framework_run", "train"):
        p = (r.get("evidence") or {}).get("bridge_path")
        if p and _bridge_path_ok(p, bridge_repo) is False:
            problems.append(f"{s.get('name')} log imports megatron.bridge from {p}")
    if problems:
        return {"name": name, "status": "Fail", "detail": "; ".join(problems), "blocked": True}
    if paths:
        return {"name": name, "status": "Pass", "detail": "; ".join(dict.fromkeys(paths))}
    if items:
        status, primary, reason = _group_status(items)
        if status == "Pass":
            return {"name": name, "status": "Fail", "detail": "megatron.bridge.__file__ was not printed"}
        return {"name": name, "status": "Skipped", "detail": reason or "not run"}
    return {"name": name, "status": "Skipped", "detail": "no import check in the plan or doctor.json"}


def _train_criteria(ctx: _Context, step: dict[str, Any], r: Mapping[str, Any]) -> list[str]:
    """Unmet pass criteria of a train step whose process succeeded."""
    missing: list[str] = []
    ev = r.get("evidence") or {}
    prog = r.get("progress") or {}
    total = step.get("total_steps") or prog.get("total")
    if not ev.get("completed"):
        missing.append("no completion evidence in the log")
    if total and (prog.get("step") or 0) < int(total):
        missing.append(f"reached step {prog.get('step') or 0} of {total}")
    if ctx.framework == "verl":
        if ev.get("vanilla_mbridge", "").lower() != "false":
            missing.append("VANILLA_MBRIDGE=False not shown in the log")
        if not ev.get("global_step"):
            missing.append("training/global_step not logged")
    return missing


def _titles(items: list[tuple[dict[str, Any], Mapping[str, Any]]]) -> str:
    return ", ".join(str(s.get("title") or s.get("name")) for s, _ in items)


def _unmet(
    ctx: _Context,
    name: str,
    items: list[tuple[dict[str, Any], Mapping[str, Any]]],
    prefix: str,
    *,
    name_steps: bool,
) -> Deliverable | None:
    """The deliverable's Fail/Blocked/Skipped entry when its steps failed, were skipped or missed
    a training criterion; None when every step met its criteria."""
    status, primary, reason = _group_status(items)
    if status in FAILING:
        p = primary or {}
        return {
            "name": name,
            "status": status,
            "primary": primary,
            "detail": f"{_titles(items)}: {p.get('class', 'failed')} - {p.get('evidence', '')}",
        }
    if status == "Skipped":
        return {"name": name, "status": "Skipped", "detail": reason}
    missing = []
    for s, r in items:
        if s.get("kind") == "train":
            missing += [f"{s.get('name')}: {m}" if name_steps else m for m in _train_criteria(ctx, s, r)]
    if missing:
        return {"name": name, "status": "Fail", "detail": prefix + "; ".join(missing)}
    return None


def _framework_run(ctx: _Context) -> Deliverable:
    name = RUN_LABELS.get(ctx.framework, "Framework run")
    items = ctx.of("framework_run", "train") or ctx.of("framework_run")
    if not items:
        return {"name": name, "status": "Skipped", "detail": "no framework run in the plan"}
    titles = _titles(items)
    unmet = _unmet(ctx, name, items, f"{titles}: ", name_steps=False)
    if unmet is not None:
        return unmet
    prog = next((r.get("progress") for s, r in items if s.get("kind") == "train"), None) or {}
    where = f" (step {prog.get('step')}/{prog.get('total')})" if prog.get("step") else ""
    return {"name": name, "status": "Pass", "detail": f"{titles}{where}"}


def _variants(ctx: _Context) -> Deliverable:
    name = "Requested variants"
    requested = list(ctx.spec.get("variants") or [])
    items = ctx.of("variant")
    levels = sorted(set(ctx.spec.get("levels") or []))
    if not requested and not items:
        return {"name": name, "status": "Not requested", "detail": "none requested"}
    label = ", ".join(requested) if requested else ""
    if not items:  # modifying variants change the framework run itself
        run = _framework_run(ctx)
        status = run["status"] if run["status"] != "Skipped" else "Skipped"
        return {
            "name": name,
            "status": status,
            "detail": f"{label} (applied to the framework run): {run['detail']}",
            "primary": run.get("primary"),
        }
    titles = _titles(items)
    desc = ", ".join(x for x in (label, f"Level {'/'.join(map(str, levels))}" if levels else "") if x)
    unmet = _unmet(ctx, name, items, "", name_steps=True)
    if unmet is not None:
        return unmet
    return {"name": name, "status": "Pass", "detail": f"{desc + ': ' if desc else ''}{titles}"}


def _capture(ctx: _Context) -> Deliverable:
    wants_metrics = ctx.framework in ("nemo-rl", "demo") or bool(ctx.of("metrics"))
    name = "Metrics/log capture" if wants_metrics else "Log capture"
    train = [(s, r) for s, r in ctx.of("framework_run") + ctx.of("variant") if s.get("kind") == "train"]
    logs: list[str] = [r["log"] for _, r in train if r.get("log")]
    if not train:
        return {"name": name, "status": "Skipped", "detail": "no training step"}
    if any(r.get("status") in ("pending", "running") for _, r in train) and not logs:
        return {"name": name, "status": "Skipped", "detail": "the run has not produced logs yet"}
    parts = [f"logs: {', '.join(logs) if logs else 'none'}"]
    ok = bool(logs)
    metric_items = ctx.of("metrics")
    if wants_metrics:
        if ctx.metrics_path is not None:
            shown = ctx.metrics_path
            if shown.is_relative_to(ctx.run_dir):
                shown = shown.relative_to(ctx.run_dir)
            parts.append(f"metrics: {shown}")
            bad = nonfinite_metrics(ctx.metrics)
            if bad:
                ok = False
                parts.append("NaN/Inf in " + ", ".join(sorted(bad)[:6]))
        else:
            ok = False
            parts.append("metrics.json not written")
        if metric_items:
            status, primary, reason = _group_status(metric_items)
            if status in FAILING:
                ok = False
                parts.append(f"metric assertions failed: {_check_row((primary or {}).get('evidence', ''))}")
                return {"name": name, "status": "Fail", "detail": "; ".join(parts), "primary": primary}
            parts.append("metric assertions " + ("passed" if status == "Pass" else f"not run ({reason})"))
            if status == "Skipped":
                return {"name": name, "status": "Skipped", "detail": "; ".join(parts)}
        elif any(s.get("checks") for s, _ in train):
            parts.append("assertions run by the wrapper (see the log)")
    return {"name": name, "status": "Pass" if ok else "Fail", "detail": "; ".join(parts)}


def _overall(
    state: Mapping[str, Any], deliverables: list[Deliverable], primary: dict[str, Any] | None
) -> str:
    if state.get("status") == "cancelled" or state.get("verdict") == "Cancelled":
        return "Cancelled"
    if primary is not None and primary.get("verdict") == "Blocked":
        return "Blocked"
    if any(d.get("blocked") for d in deliverables):
        return "Blocked"
    statuses = [d["status"] for d in deliverables]
    if "Blocked" in statuses:
        return "Blocked"
    if "Fail" in statuses or (primary is not None and primary.get("verdict") == "Fail"):
        return "Fail"
    if all(s in ("Pass", "Not requested") for s in statuses):
        return "Pass"
    return "Incomplete"


def _limitations(ctx: _Context, findings: list[dict[str, Any]]) -> list[str]:
    data = _limitations_catalog()
    learning = data["learning_levels"].get(ctx.framework)
    levels = set(ctx.spec.get("levels") or [])
    text_parts = [f"{k}={v}" for k, v in (ctx.spec.get("env") or {}).items()]
    text_parts += list(ctx.spec.get("overrides") or [])
    for s in ctx.plan_steps:
        if s.get("kind") == "train":
            text_parts += [str(a) for a in s.get("argv") or []]
            text_parts += [f"{k}={v}" for k, v in (s.get("env") or {}).items()]
    blob = "\n".join(text_parts)
    classes = {f.get("class") for f in findings}
    remedy_cls = ((ctx.spec.get("extra") or {}).get("remedy") or {}).get("class")
    out: list[str] = []
    for lim in data["limitations"]:
        when, pat = lim.get("when"), lim.get("pattern", "")
        hit = False
        if when == "text":
            hit = bool(re.search(pat, blob))
        elif when == "no_learning":
            hit = ctx.framework != "demo" and (learning is None or learning not in levels)
        elif when == "learning":
            hit = learning is not None and learning in levels
        elif when == "finding":
            hit = pat in classes
        elif when == "framework":
            hit = ctx.framework == pat
        elif when == "model_no_ep":
            ep = re.search(r"(?:expert_model_parallel_size|COMMON_EP)=([2-9]|\d\d+)", blob)
            hit = bool(re.search(pat, str(ctx.spec.get("model") or ""))) and not ep
        elif when == "remedy":
            hit = remedy_cls == pat
        if hit:
            out.append(lim["text"])
    for d in ctx.of("variant") + ctx.of("framework_run"):
        for crit in d[0].get("criteria") or []:
            if crit.startswith("Report as a limitation:"):
                out.append(crit.split(":", 1)[1].strip())
    return list(dict.fromkeys(out))


def _follow_ups(
    verdict: str, deliverables: list[Deliverable], primary: dict[str, Any] | None, primary_step: str | None
) -> list[str]:
    out: list[str] = []
    if primary is not None:
        where = f" in {primary_step}" if primary_step else ""
        kind = "environment fix" if primary.get("verdict") == "Blocked" else "fix"
        out.append(f"{kind} ({primary.get('class')}{where}): {primary.get('advice', '')}")
        fix = remedy_text(primary.get("remedy"))
        if fix:
            out.append("rerun with: " + fix)
    if verdict == "Blocked":
        out.append("The run is Blocked by the environment: it is not evidence against the Bridge provider.")
    for d in deliverables:
        if d["status"] == "Skipped":
            out.append(f"run the skipped deliverable '{d['name']}' ({d['detail']})")
    return out or ["none"]
