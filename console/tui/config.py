"""The console's small per-user settings file (the chosen theme), under XDG config home."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from console.fileio import write_json_atomic


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rl-console" / "tui.json"


def load_config() -> dict[str, Any]:
    try:
        data = json.loads(config_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_config(**updates: Any) -> None:
    """Merge ``updates`` into the file (atomic replace); failures are silent: settings are a nicety."""
    with contextlib.suppress(OSError):
        write_json_atomic(config_path(), load_config() | updates, fsync=False)
