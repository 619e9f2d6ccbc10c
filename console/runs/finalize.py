"""The end of a step and of a run, recorded once inside the run folder: what a step wrote outside it
(``collect_evidence``, so a later run in the same checkout cannot change this run's record) and the
verdict (``record_verdict``: ``triage.json`` and the report, which ``report`` and the TUI read).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import traceback
from pathlib import Path
from typing import Any

from console.fileio import write_json_atomic
from console.rundir.paths import step_path

EVIDENCE_DIR = "evidence"
MAX_TB_BYTES = 256 << 20  # TB event files copied per step at most
RESERVE_FILE = ".reserve"
RESERVE_BYTES = 256 << 10  # freed on a full disk so the verdict can still be written


def _inside(path: Path, run_dir: Path) -> bool:
    try:
        return path.resolve().is_relative_to(run_dir.resolve())
    except OSError:
        return False


def _fingerprint(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def evidence_snapshot(run_dir: Path, step: dict[str, Any]) -> dict[str, list[int]]:
    """Fingerprints (inode, size, mtime) of the evidence files that exist before the step starts:
    a file that still has its fingerprint when the step ends is an earlier run's, whatever the
    file system's timestamp granularity."""
    run_dir = Path(run_dir)
    snap: dict[str, list[int]] = {}
    mj = step_path(step.get("metrics_json"), step, run_dir)
    if mj is not None and (fp := _fingerprint(mj)) is not None:
        snap[str(mj)] = fp
    tb = step_path(step.get("tb_dir"), step, run_dir)
    if tb is not None and tb.is_dir():
        with contextlib.suppress(OSError):
            for src in tb.rglob("events.out.tfevents*"):
                if (fp := _fingerprint(src)) is not None:
                    snap[str(src)] = fp
    return snap


def _fresh(path: Path, since: float | None, before: dict[str, list[int]] | None = None) -> bool:
    """Written by this step. With ``before`` (the fingerprints taken as it started): new or changed
    since then. Without it (an old state.json): modified after the step started."""
    if before is not None:
        fp = _fingerprint(path)
        return fp is not None and before.get(str(path)) != fp
    if since is None:
        return True
    try:
        return path.stat().st_mtime >= since - 1.0
    except OSError:
        return False


def collect_evidence(
    run_dir: Path,
    index: int,
    step: dict[str, Any],
    since: float | None = None,
    before: dict[str, list[int]] | None = None,
) -> list[str]:
    """Copy the step's metrics.json and TB event files into the run folder; return the copies
    (relative to the run folder). Files already inside the run folder stay where they are; with
    ``since`` (the step's start time) files older than the step (an earlier run's) are left out."""
    run_dir = Path(run_dir)
    dest = run_dir / EVIDENCE_DIR / f"{index + 1:02d}-{step.get('name', 'step')}"
    copied: list[str] = []
    mj = step_path(step.get("metrics_json"), step, run_dir)
    if mj is not None and mj.is_file() and not _inside(mj, run_dir) and _fresh(mj, since, before):
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(mj, dest / "metrics.json")
        shutil.copy2(mj, run_dir / ".metrics.json.tmp")
        os.replace(run_dir / ".metrics.json.tmp", run_dir / "metrics.json")
        copied += [str((dest / "metrics.json").relative_to(run_dir)), "metrics.json"]
    tb = step_path(step.get("tb_dir"), step, run_dir)
    if tb is not None and tb.is_dir() and not _inside(tb, run_dir):
        total = 0
        for src in sorted(tb.rglob("events.out.tfevents*")):
            try:
                size = src.stat().st_size
            except OSError:
                continue
            if total + size > MAX_TB_BYTES:
                break
            if not _fresh(src, since, before):
                continue
            target = dest / "tb" / src.relative_to(tb)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
            total += size
            copied.append(str(target.relative_to(run_dir)))
    return copied


def primary_finding(
    class_id: str, verdict: str, evidence: str, rule: str, info: dict[str, Any], line: int = 0, **more: Any
) -> dict[str, Any]:
    """A primary finding no log rule made (a full disk, the job state): ``info`` has its class's
    title, advice and remedy."""
    return {
        "class": class_id,
        "verdict": verdict,
        "line": line,
        "evidence": evidence,
        "advice": info.get("advice"),
        "title": info.get("title"),
        "remedy": dict(info.get("remedy") or {"env": {}, "overrides": [], "unset": []}),
        "rule": rule,
        **more,
    }


def no_space_primary(evidence: str) -> dict[str, Any]:
    from console.triage.rules import default_catalog

    info: dict[str, Any] = {"advice": "Free disk space on the run folder's file system, then rerun."}
    with contextlib.suppress(Exception):
        c = default_catalog().classes["no_space"]
        info = {"advice": c.advice, "remedy": c.remedy, "title": c.title}
    return primary_finding("no_space", "Blocked", evidence, "supervisor:ENOSPC", info)


def record_verdict(
    run_dir: Path,
    verdict: str,
    *,
    primary: dict[str, Any] | None = None,
    triage: dict[str, Any] | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """Compute the run's triage once (unless given), set its final ``verdict`` (and ``primary``
    when given), write ``triage.json`` and the report. Returns the triage dict."""
    run_dir = Path(run_dir)
    if triage is None:
        try:
            from console.triage.verdict import run_verdict

            triage = dict(run_verdict(run_dir))
        except Exception:
            traceback.print_exc(file=sys.stderr)
            triage = {"framework": "unknown", "findings": [], "progress": {"step": None, "total": None}}
    triage = dict(triage)
    triage["verdict"] = verdict
    if primary is not None:
        triage["primary"] = primary
        findings = list(triage.get("findings") or [])
        findings.insert(
            0, {k: primary.get(k) for k in ("class", "verdict", "line", "evidence")} | {"count": 1}
        )
        triage["findings"] = findings
    if reason:
        triage["reason"] = reason
    write_json_atomic(run_dir / "triage.json", triage)
    with contextlib.suppress(Exception):
        from console.report import render_json, write_report

        write_report(run_dir, render_json(run_dir, verdict=triage))
    return triage


def make_reserve(run_dir: Path) -> None:
    """Hold ``RESERVE_BYTES`` of the run folder's disk, to free when it fills up."""
    with contextlib.suppress(OSError), open(Path(run_dir) / RESERVE_FILE, "wb") as fh:
        fh.write(b"\0" * RESERVE_BYTES)


def free_reserve(run_dir: Path) -> None:
    with contextlib.suppress(OSError):
        (Path(run_dir) / RESERVE_FILE).unlink()


def disk_nearly_full(path: Path, below: int = 64 << 10) -> bool:
    """Fewer than ``below`` bytes free for unprivileged writes on ``path``'s file system."""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < below
