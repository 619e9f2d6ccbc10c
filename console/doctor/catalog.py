"""The doctor's data file (console/catalog/doctor.toml), loaded once."""

from __future__ import annotations

from console.catalog.schema import DoctorCatalog, load_checked


def doctor_catalog() -> DoctorCatalog:
    catalog: DoctorCatalog = load_checked("doctor", DoctorCatalog)
    return catalog
