"""Run-folder and settings files: atomic writes (a reader never sees half a file, and a failed
write on a full disk leaves the previous file intact and no temp file behind) and tolerant reads."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str, *, fsync: bool = True) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any, *, fsync: bool = True) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, default=str) + "\n", fsync=fsync)


def read_json(path: Path, default: Any = None) -> Any:
    """The parsed file, or ``default`` when it is missing, unreadable or not JSON (mid-write)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return default


def runs_folder_problem(path: Path) -> str | None:
    """Why the runs folder (or, when it does not exist yet, the folder it would be created in)
    cannot take a new run; None when a file can be created there."""
    target = Path(path).expanduser()
    if target.exists() and not target.is_dir():
        return "not a directory"
    where = target
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        return f"{where} is not a directory"
    try:
        with tempfile.TemporaryFile(dir=where, prefix=".rl-console-write-test"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
