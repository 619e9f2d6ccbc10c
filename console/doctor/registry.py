"""The checks in report order, and `run_doctor` which runs them (concurrently: most wait on subprocesses)."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from console.doctor.context import DoctorContext, Probes, build_context
from console.doctor.devices import check_gpus, check_visible_devices
from console.doctor.disk import check_disk_space
from console.doctor.drift import check_catalog_drift
from console.doctor.hf import check_hf_snapshot
from console.doctor.imports import check_bridge_import_driver, check_bridge_import_ray_worker
from console.doctor.interpreter import RunInterpreter
from console.doctor.interpreter_check import check_run_interpreter
from console.doctor.mcore import check_mcore_helpers
from console.doctor.model import Check, DoctorResult
from console.doctor.ray_cluster import check_stale_ray
from console.doctor.repos import check_repo_state
from console.doctor.result import make_remedy, overall_verdict
from console.doctor.tools import check_tools
from console.errors import SpecError
from console.redact import redact_text
from console.spec import RunSpec

CheckFn = Callable[[DoctorContext], Check]

CHECKS: dict[str, CheckFn] = {
    "repo_state": check_repo_state,
    "run_interpreter": check_run_interpreter,
    "bridge_import_driver": check_bridge_import_driver,
    "bridge_import_ray_worker": check_bridge_import_ray_worker,
    "visible_devices": check_visible_devices,
    "disk_space": check_disk_space,
    "hf_snapshot": check_hf_snapshot,
    "stale_ray": check_stale_ray,
    "gpus": check_gpus,
    "mcore_helpers": check_mcore_helpers,
    "tools": check_tools,
    "catalog_drift": check_catalog_drift,
}
CHECK_IDS: tuple[str, ...] = tuple(CHECKS)


def _run_one(check_id: str, ctx: DoctorContext) -> Check:
    entry: Check
    try:
        entry = CHECKS[check_id](ctx)
    except Exception as exc:  # a broken probe must not hide the other checks
        entry = {
            "id": check_id,
            "status": "warn",
            "evidence": f"check crashed: {type(exc).__name__}: {exc}",
            "advice": "The doctor could not run this check; verify it by hand.",
            "remedy": make_remedy(),
        }
    return _redacted(entry)


def _redacted(entry: Check) -> Check:
    remedy = entry.get("remedy") or make_remedy()
    return {
        "id": entry["id"],
        "status": entry["status"],
        "evidence": redact_text(str(entry.get("evidence", ""))),
        "advice": redact_text(str(entry.get("advice", ""))),
        "remedy": make_remedy(
            {k: redact_text(v) for k, v in (remedy.get("env") or {}).items()},
            remedy.get("unset") or [],
            [redact_text(o) for o in remedy.get("overrides") or []],
            remedy.get("commands") or [],
        ),
    }


def run_doctor(
    spec: RunSpec,
    plan: Any = None,
    *,
    checks: list[str] | None = None,
    probes: Probes | None = None,
    run_dir: Path | None = None,
    context: DoctorContext | None = None,
) -> DoctorResult:
    """Run the preflight checks (``checks``: ids, default all, in report order), concurrently: a
    ``DoctorResult`` (console/doctor/model.py; ``interpreter``: ``RunInterpreter.to_dict``). ``plan``:
    a ``console.plan.Plan`` or its dict (without one the procedures' PYTHONPATH is computed from the
    spec); ``probes`` replaces machine readings, ``context`` the whole context (tests)."""
    wanted = list(checks) if checks else list(CHECK_IDS)
    unknown = [c for c in wanted if c not in CHECKS]
    if unknown:
        raise SpecError(f"unknown doctor check(s) {', '.join(unknown)}; known: {', '.join(CHECK_IDS)}")
    ctx = context or build_context(spec, plan, run_dir=run_dir, probes=probes)
    workers = max(1, int(ctx.catalog["defaults"]["parallel"]))
    with ThreadPoolExecutor(max_workers=min(workers, len(wanted))) as pool:
        results = list(pool.map(lambda cid: _run_one(cid, ctx), wanted))
    out: DoctorResult = {"verdict": overall_verdict(results), "checks": results}
    interp = ctx.cache.get("interpreter")
    if isinstance(interp, RunInterpreter):
        out["interpreter"] = json.loads(redact_text(json.dumps(interp.to_dict())))
    return out
