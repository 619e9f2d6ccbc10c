"""console.doctor: preflight checks that prove the environment before spending GPU hours.

`run_doctor(spec, plan=None, *, checks=None) -> {"verdict": "ok|warn|block", "checks": [...], "interpreter": {...}}`
(`interpreter`: the run's own interpreter as the checks probed it, console/doctor/interpreter.py),
`preflight(spec, plan, run_dir) -> dict` (also writes `doctor.json`). The checks' advice, statuses
and thresholds live in `console/catalog/doctor.toml`.
"""

from __future__ import annotations

from console.doctor.preflight import preflight
from console.doctor.registry import CHECK_IDS, run_doctor

__all__ = ["CHECK_IDS", "preflight", "run_doctor"]
