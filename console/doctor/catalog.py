"""The doctor's data file (console/catalog/doctor.toml), read once per version and checked against
``DoctorCatalog`` (console/catalog/schema.py)."""

from __future__ import annotations

from console.catalog.schema import DoctorCatalog, load_checked


def doctor_catalog() -> DoctorCatalog:
    return load_checked("doctor", DoctorCatalog)
