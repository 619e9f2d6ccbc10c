"""The doctor's data file (console/catalog/doctor.toml), loaded once."""

from __future__ import annotations

from typing import Any

from console.catalog import load_toml


def doctor_catalog() -> dict[str, Any]:
    return load_toml("doctor")
