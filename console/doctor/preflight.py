"""`preflight`: the doctor run before each run, its result kept as the run folder's `doctor.json`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from console.doctor.model import DoctorResult
from console.doctor.registry import run_doctor
from console.fileio import write_json_atomic
from console.spec import RunSpec

DOCTOR_FILE = "doctor.json"


def write_doctor_json(run_dir: Path, result: DoctorResult) -> None:
    """Write `doctor.json` atomically (tmp + fsync + rename). The result is already redacted."""
    write_json_atomic(run_dir / DOCTOR_FILE, result)


def preflight(spec: RunSpec, plan: Any, run_dir: Path | None) -> DoctorResult:
    """Run every check for `spec`/`plan`; write `<run_dir>/doctor.json` when a run folder is given
    (the caller refuses to start on a "block" verdict unless the user chose --no-doctor)."""
    result = run_doctor(spec, plan, run_dir=run_dir)
    if run_dir is not None:
        write_doctor_json(Path(run_dir), result)
    return result


def blocks(result: Mapping[str, Any]) -> bool:
    return result.get("verdict") == "block"
