"""The doctor's data file (console/catalog/doctor.toml), loaded once."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from console.catalog.schema import DoctorCatalog, validate

CATALOG_PATH = Path(__file__).resolve().parent.parent / "catalog" / "doctor.toml"


@functools.lru_cache(maxsize=1)
def doctor_catalog() -> DoctorCatalog:
    with CATALOG_PATH.open("rb") as fh:
        data = tomllib.load(fh)
    catalog: DoctorCatalog = validate(data, DoctorCatalog, CATALOG_PATH.name)
    return catalog
