"""Every catalog data file is checked at load: a wrong key or a wrong type planted in a copy of each
kind of file is a one-line CatalogError naming the file and the dotted key."""

import tomllib
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import pytest

from console.catalog import CATALOG_DIR, CatalogError, parse_framework
from console.catalog.progress import load_progress_patterns
from console.catalog.schema import SHAPES, validate
from console.triage import rules

pytestmark = pytest.mark.timeout(60)


def _planted(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """A copy of catalog file ``name`` with the first ``old`` replaced by ``new``."""
    text = (CATALOG_DIR / name).read_text(encoding="utf-8")
    assert old in text, f"{name} no longer holds {old!r}: pick another line to plant into"
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def _load(path: Path) -> Any:
    """What the console does with a file of this kind when it loads it."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    if path.name == "triage_rules.toml":
        return rules.load_catalog(path)
    if path.name == "progress.toml":  # its own loader also checks each regex's named groups
        validate(data, SHAPES[path.name], path.name)
        return load_progress_patterns(path)
    if "framework" in data:
        return parse_framework(data, path.name)
    return validate(data, SHAPES[path.name], path.name)


def test_every_catalog_file_has_a_shape_and_loads() -> None:
    files = sorted(CATALOG_DIR.glob("*.toml"))
    assert len(files) >= 9
    for path in files:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert "framework" in data or path.name in SHAPES, f"{path.name}: no schema checks this file"
        _load(path)


# (file, text to replace, planted text, what the error says)
PLANTS = [
    (
        "doctor.toml",
        "uv_flag_sets = 4",
        'uv_flag_sets = "4"',
        "doctor.toml: defaults.uv_flag_sets: expected int, got str",
    ),
    ("doctor.toml", "warn_factor = 2.0", "warn_facter = 2.0", "doctor.toml: disk.warn_facter: unknown key"),
    (
        "doctor.toml",
        'ok = { status = "ok", advice = "" }',
        'ok = { status = "fine", advice = "" }',
        "doctor.toml: checks.run_interpreter.ok.status: expected 'ok' or 'warn' or 'block', got 'fine'",
    ),
    ("compare.toml", "last_k = 5", 'last_k = "5"', "compare.toml: defaults.last_k: expected int, got str"),
    (
        "compare.toml",
        'inherit = "nemo-rl"',
        'inherits = "nemo-rl"',
        "compare.toml: frameworks.demo.inherits: unknown key",
    ),
    ("slurm.toml", "grace_s = 5", 'grace_s = "5s"', "slurm.toml: pending.grace_s: expected float, got str"),
    (
        "slurm.toml",
        "exit_codes = [232, 233]",
        "exit_code = [232, 233]",
        "slurm.toml: launch_failure.exit_code: unknown key",
    ),
    (
        "redaction.toml",
        'secret_words = ["token"',
        "secret_words = [1",
        "redaction.toml: secret_words[0]: expected str, got int",
    ),
    ("redaction.toml", "not_secret = [", "not_secrets = [", "redaction.toml: not_secrets: unknown key"),
    (
        "guidance.toml",
        "nemo-rl = [0]",
        'nemo-rl = ["0"]',
        "guidance.toml: touched[0].nemo-rl[0]: expected int, got str",
    ),
    ("guidance.toml", 'label = "A new', 'lable = "A new', "guidance.toml: touched[0].lable: unknown key"),
    (
        "triage_rules.toml",
        "version = 1",
        'version = "1"',
        "triage_rules.toml: version: expected int, got str",
    ),
    ("triage_rules.toml", "\nconfidence = 0.6\n", '\nconfidence = "high"\n', "triage_rules.toml: rule["),
    (
        "progress.toml",
        'kind = "progress"',
        'kind = "steps"',
        "progress.toml: pattern[0].kind: expected 'progress'",
    ),
    (
        "progress.toml",
        'literals = ["= Step "]',
        'literal = ["= Step "]',
        "progress.toml: pattern[0].literal: unknown key",
    ),
    ("demo.toml", "gpus = 0", 'gpus = "0"', "demo.toml: levels[0].gpus: expected int, got str"),
    ("demo.toml", "proves = ", "proofs = ", "demo.toml: levels[0].proofs: unknown key"),
]


@pytest.mark.parametrize(("name", "old", "new", "says"), PLANTS, ids=[f"{p[0]}:{p[2]}" for p in PLANTS])
def test_a_planted_key_or_type_is_a_clear_error(
    tmp_path: Path, name: str, old: str, new: str, says: str
) -> None:
    path = _planted(tmp_path, name, old, new)
    with pytest.raises((CatalogError, rules.CatalogError)) as err:
        _load(path)
    message = str(err.value)
    assert says in message
    assert "\n" not in message


class _Shape(TypedDict):  # (no `from __future__ import annotations` here: 3.11 needs NotRequired evaluated)
    n: int
    x: float
    flag: bool
    names: NotRequired[list[str]]


def test_the_check_reads_types_as_toml_writes_them() -> None:
    assert validate({"n": 1, "x": 2, "flag": True}, _Shape, "f.toml") == {"n": 1, "x": 2, "flag": True}
    with pytest.raises(CatalogError, match=r"^f\.toml: n: expected int, got bool$"):
        validate({"n": True, "x": 1.0, "flag": True}, _Shape, "f.toml")
    with pytest.raises(CatalogError, match=r"^f\.toml: flag: expected bool, got int$"):
        validate({"n": 1, "x": 1.0, "flag": 1}, _Shape, "f.toml")
    with pytest.raises(CatalogError, match=r"^f\.toml: top level: missing key flag$"):
        validate({"n": 1, "x": 1.0}, _Shape, "f.toml")
    with pytest.raises(CatalogError, match=r"^f\.toml: names\[1\]: expected str, got int$"):
        validate({"n": 1, "x": 1.0, "flag": False, "names": ["a", 2]}, _Shape, "f.toml")
