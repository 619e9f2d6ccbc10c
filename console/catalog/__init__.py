"""The validation procedures as data: loader and schema check for ``console/catalog/*.toml``.

``load_framework(name) -> FrameworkCatalog`` reads ``<name>.toml`` (``nemo-rl`` -> ``nemo_rl.toml``),
``load_guidance() -> list[TouchedArea]`` reads ``guidance.toml``. Every file is checked against its
shape in ``console.catalog.schema``; an unknown key or a wrong type is a ``CatalogError`` naming the
file and the key, so a typo in a data change fails loudly instead of silently dropping a command.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal

from console.errors import ConsoleError

CATALOG_DIR = Path(__file__).resolve().parent


class CatalogError(ConsoleError):
    """A catalog data file cannot be read or does not match its schema (one line: file and reason)."""


def load_toml(name_or_path: str | Path, shape: Any = None) -> dict[str, Any]:
    """A TOML data file as a dict: a bare name (``"doctor"``, ``"slurm.toml"``) is a file of this
    catalog folder, anything else a path. Parsed once per file version (path, mtime, size); treat the
    dict as read-only. Missing, unreadable or malformed: a ``CatalogError`` naming the file and why.
    ``shape`` (a TypedDict of ``console.catalog.schema``): checked against it once per version too,
    an unknown key or a wrong type a ``CatalogError`` naming the file and the key."""
    path = Path(name_or_path)
    if not isinstance(name_or_path, Path) and path.name == str(name_or_path):
        path = CATALOG_DIR / (path.name if path.suffix == ".toml" else f"{path.name}.toml")
    try:
        stat = path.stat()
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return _parse_toml(path, stat.st_mtime_ns, stat.st_size, shape)


@lru_cache(maxsize=64)
def _parse_toml(path: Path, _mtime_ns: int, _size: int, shape: Any = None) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: not valid TOML: {exc}") from None
    if shape is not None:
        from console.catalog.schema import validate  # it imports CatalogError from here

        data = validate(data, shape, path.name)
    return data


# The dataclasses below are also the shapes of the framework files' tables (console.catalog.schema
# builds them from the checked TOML): a field without a default is a required key.


@dataclass(frozen=True)
class StepTemplate:
    """One step as written in the catalog (placeholders unresolved)."""

    name: str
    title: str
    argv: tuple[str, ...]
    cwd: str
    kind: Literal["setup", "check", "train", "metrics"]
    deliverable: Literal["setup", "bridge_checks", "bridge_import", "framework_run", "variant", "metrics"]
    proves: str
    criteria: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    gpus: int = 0
    gpus_key: str | None = None
    gpus_env: str | None = None
    total_steps: int | None = None
    steps_key: str | None = None
    steps_env: str | None = None
    log_files: tuple[str, ...] = ()
    tb_dir: str | None = None
    metrics_json: str | None = None
    checks: tuple[str, ...] = ()
    on_failure: Literal["stop", "continue"] = "stop"
    overrides: bool = False
    model: bool = False
    model_env: dict[str, str] = field(default_factory=dict)
    needs_model: bool = False
    forwards_unquoted: bool = False
    config: str | None = None
    implied: dict[str, str] = field(default_factory=dict)
    report_metrics: tuple[str, ...] = ()
    when_levels: tuple[int, ...] = ()
    append_bridge_tests: bool = False
    skip_if_exists: tuple[str, ...] = ()
    # a note the report shows (where the procedure and upstream differ), and "run through the
    # framework's launcher" ([framework] launcher, e.g. verl's uv run)
    note: str | None = None
    launcher: bool = False


@dataclass(frozen=True)
class Variant:
    name: str
    levels: tuple[int, ...]
    title: str
    mode: Literal["modify", "rerun", "add"]
    proves: str
    targets: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    criteria: tuple[str, ...] = ()
    report_metrics: tuple[str, ...] = ()
    needs_model: bool = False
    steps: tuple[StepTemplate, ...] = ()
    note: str | None = None


@dataclass(frozen=True)
class Level:
    number: int
    title: str
    required_when: str
    proves: str
    gpus: int
    requires_variant: bool = False
    steps: tuple[StepTemplate, ...] = ()


@dataclass(frozen=True)
class TPGuard:
    tp_keys: tuple[str, ...]
    min_tp: int
    micro_key: str
    logprob_key: str
    advice: str


@dataclass(frozen=True)
class FrameworkInfo:
    """A framework file's ``[framework]`` table."""

    name: str
    title: str
    needs_repo: bool
    needs_bridge: bool
    overrides: Literal["hydra", "none"]
    run_label: str
    repo_env: str | None = None
    pythonpath: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()
    model_args: tuple[str, ...] = ()
    model_path_args: tuple[str, ...] = ()
    model_env: dict[str, str] = field(default_factory=dict)
    model_path_env: dict[str, str] = field(default_factory=dict)
    gpus_advice: str = ""
    launcher: tuple[str, ...] = ()
    launcher_off: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FrameworkCatalog(FrameworkInfo):
    """One framework's catalog: its ``[framework]`` table and the rest of its file."""

    placeholders: dict[str, str] = field(default_factory=dict)
    run_env: dict[str, str] = field(default_factory=dict)
    before_train: tuple[StepTemplate, ...] = ()
    setup: tuple[StepTemplate, ...] = ()
    levels: tuple[Level, ...] = ()
    variants: tuple[Variant, ...] = ()
    tp_guard: TPGuard | None = None

    def level(self, number: int) -> Level | None:
        return next((lv for lv in self.levels if lv.number == number), None)

    def variant(self, name: str) -> Variant | None:
        return next((v for v in self.variants if v.name == name), None)


@dataclass(frozen=True)
class TouchedArea:
    id: str
    label: str
    levels: dict[str, tuple[int, ...]]


def _check_steps(steps: tuple[StepTemplate, ...], where: str) -> None:
    for s in steps:
        if not s.argv:
            raise CatalogError(f"{where} {s.name!r}: argv is empty")


def _check_variant(v: Variant, where: str, step_names: set[str]) -> None:
    where = f"{where} {v.name!r}"
    _check_steps(v.steps, f"{where} step")
    if v.mode == "add" and not v.steps:
        raise CatalogError(f"{where}: mode 'add' needs [[variants.steps]]")
    if v.mode in ("modify", "rerun"):
        if not v.targets:
            raise CatalogError(f"{where}: mode {v.mode!r} needs targets")
        for name in v.targets:
            if not name.startswith("*") and name not in step_names:
                raise CatalogError(f"{where}: target {name!r} is not a level step")


def catalog_path(name: str) -> Path:
    return CATALOG_DIR / f"{name.replace('-', '_')}.toml"


def parse_framework(data: dict[str, Any], source: str = "<catalog>") -> FrameworkCatalog:
    """Validate one framework's parsed TOML and build its catalog."""
    from console.catalog.schema import FrameworkFile, validate  # it imports CatalogError from here

    checked: FrameworkFile = validate(data, FrameworkFile, source)
    levels = checked.get("levels", [])
    for lv in levels:
        _check_steps(lv.steps, f"{source} level {lv.number} step")
    numbers = [lv.number for lv in levels]
    if len(set(numbers)) != len(numbers):
        raise CatalogError(f"{source}: duplicate level numbers")
    step_names = {s.name for lv in levels for s in lv.steps}
    variants = tuple(checked.get("variants", []))
    for v in variants:
        _check_variant(v, f"{source} [[variants]]", step_names)
    for v in variants:
        bad = [n for n in v.levels if n not in numbers]
        if bad:
            raise CatalogError(f"{source}: variant {v.name!r} names unknown level(s) {bad}")
    names = [s.name for lv in levels for s in lv.steps] + [s.name for v in variants for s in v.steps]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise CatalogError(f"{source}: duplicate step names {sorted(dupes)}")
    before_train, setup = tuple(checked.get("before_train", [])), tuple(checked.get("setup", []))
    _check_steps(before_train, f"{source} [[before_train]]")
    _check_steps(setup, f"{source} [[setup]]")
    return FrameworkCatalog(
        **vars(checked["framework"]),
        placeholders=checked.get("placeholders", {}),
        run_env=checked.get("run_env", {}),
        before_train=before_train,
        setup=setup,
        levels=tuple(sorted(levels, key=lambda lv: lv.number)),
        variants=variants,
        tp_guard=checked.get("tp_guard"),
    )


def known_frameworks() -> list[str]:
    """Frameworks with a catalog file (a TOML file holding a [framework] table)."""
    return sorted(
        p.stem.replace("_", "-")
        for p in CATALOG_DIR.glob("*.toml")
        if "[framework]" in p.read_text(encoding="utf-8")
    )


@cache
def load_framework(name: str) -> FrameworkCatalog:
    """The catalog of one framework (``nemo-rl``, ``verl``, ``demo``)."""
    path = catalog_path(name)
    if name not in known_frameworks():
        raise CatalogError(f"unknown framework {name!r} (known: {', '.join(known_frameworks())})")
    cat = parse_framework(load_toml(path), path.name)
    if cat.name != name:
        raise CatalogError(f"{path.name}: [framework] name is {cat.name!r}, expected {name!r}")
    return cat


@cache
def load_guidance() -> tuple[TouchedArea, ...]:
    """The "what did your change touch?" answers and the levels each framework requires for them."""
    from console.catalog.schema import GuidanceCatalog, load_checked

    return tuple(
        TouchedArea(
            id=t["id"], label=t["label"], levels={fw: tuple(t[fw]) for fw in ("nemo-rl", "verl", "demo")}
        )
        for t in load_checked("guidance", GuidanceCatalog)["touched"]
    )
