"""`preflight`: the doctor run before each run, its result kept as the run folder's `doctor.json`."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from console.doctor.registry import run_doctor
from console.spec import RunSpec

DOCTOR_FILE = "doctor.json"


def write_doctor_json(run_dir: Path, result: dict[str, Any]) -> Path:
    """Write `doctor.json` atomically (tmp + fsync + rename). The result is already redacted."""
    run_dir.mkdir(parents=True, exist_ok=True)
    target = run_dir / DOCTOR_FILE
    fd, tmp = tempfile.mkstemp(prefix=".doctor.", dir=run_dir)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(result, fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def preflight(spec: RunSpec, plan: Any, run_dir: Path | None) -> dict[str, Any]:
    """Run every check for `spec`/`plan`; write `<run_dir>/doctor.json` when a run folder is given.

    The caller refuses to start when `result["verdict"] == "block"` unless the user chose --no-doctor.
    """
    result = run_doctor(spec, plan, run_dir=run_dir)
    if run_dir is not None:
        write_doctor_json(Path(run_dir), result)
    return result


def blocks(result: dict[str, Any]) -> bool:
    return result.get("verdict") == "block"
