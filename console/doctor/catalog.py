"""The doctor's data file (console/catalog/doctor.toml), loaded once."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any

CATALOG_PATH = Path(__file__).resolve().parent.parent / "catalog" / "doctor.toml"


@functools.lru_cache(maxsize=1)
def doctor_catalog() -> dict[str, Any]:
    with CATALOG_PATH.open("rb") as fh:
        return tomllib.load(fh)
