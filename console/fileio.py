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
