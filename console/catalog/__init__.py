"""The validation procedures as data: loader and schema check for ``console/catalog/*.toml``.

``load_framework(name) -> FrameworkCatalog`` reads ``<name>.toml`` (``nemo-rl`` -> ``nemo_rl.toml``),
``load_guidance() -> list[TouchedArea]`` reads ``guidance.toml``. Every table is checked against the
schema below; an unknown key or a wrong type is a ``CatalogError`` naming the file and the table,
so a typo in a data change fails loudly instead of silently dropping a command.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from console.errors import ConsoleError

CATALOG_DIR = Path(__file__).resolve().parent
KINDS = ("setup", "check", "train", "metrics")
DELIVERABLES = ("setup", "bridge_checks", "bridge_import", "framework_run", "variant", "metrics")
VARIANT_MODES = ("modify", "rerun", "add")

_STR = str
_LIST = list
_DICT = dict
# key -> (type, required)
STEP_KEYS: dict[str, tuple[type, bool]] = {
    "name": (_STR, True),
    "title": (_STR, True),
    "argv": (_LIST, True),
    "cwd": (_STR, True),
    "kind": (_STR, True),
    "deliverable": (_STR, True),
    "proves": (_STR, True),
    "criteria": (_LIST, False),
    "env": (_DICT, False),
    "unset": (_LIST, False),
    "gpus": (int, False),
    "gpus_key": (_STR, False),
    "gpus_env": (_STR, False),
    "total_steps": (int, False),
    "steps_key": (_STR, False),
    "steps_env": (_STR, False),
    "log_files": (_LIST, False),
    "tb_dir": (_STR, False),
    "metrics_json": (_STR, False),
    "checks": (_LIST, False),
    "on_failure": (_STR, False),
    "overrides": (bool, False),
    "model": (bool, False),
    "model_env": (_DICT, False),
    "needs_model": (bool, False),
    "forwards_unquoted": (bool, False),
    "config": (_STR, False),
    "implied": (_DICT, False),
    "report_metrics": (_LIST, False),
    "when_levels": (_LIST, False),
    "append_bridge_tests": (bool, False),
    "skip_if_exists": (_LIST, False),
    # upstream-truth additions: a note the report shows (where the procedure and upstream differ),
    # and "run through the framework's launcher" ([framework] launcher, e.g. verl's uv run)
    "note": (_STR, False),
    "launcher": (bool, False),
}
FRAMEWORK_KEYS: dict[str, tuple[type, bool]] = {
    "name": (_STR, True),
    "title": (_STR, True),
    "needs_repo": (bool, True),
    "needs_bridge": (bool, True),
    "overrides": (_STR, True),
    "run_label": (_STR, True),
    "repo_env": (_STR, False),
    "pythonpath": (_LIST, False),
    "pass_env": (_LIST, False),
    "model_args": (_LIST, False),
    "model_path_args": (_LIST, False),
    "model_env": (_DICT, False),
    "model_path_env": (_DICT, False),
    "gpus_advice": (_STR, False),
    "launcher": (_LIST, False),
    "launcher_off": (_DICT, False),
}
LEVEL_KEYS: dict[str, tuple[type, bool]] = {
    "number": (int, True),
    "title": (_STR, True),
    "required_when": (_STR, True),
    "proves": (_STR, True),
    "gpus": (int, True),
    "requires_variant": (bool, False),
    "steps": (_LIST, False),
}
VARIANT_KEYS: dict[str, tuple[type, bool]] = {
    "name": (_STR, True),
    "levels": (_LIST, True),
    "title": (_STR, True),
    "mode": (_STR, True),
    "proves": (_STR, True),
    "targets": (_LIST, False),
    "args": (_LIST, False),
    "env": (_DICT, False),
    "criteria": (_LIST, False),
    "report_metrics": (_LIST, False),
    "needs_model": (bool, False),
    "steps": (_LIST, False),
    "note": (_STR, False),
}
TP_GUARD_KEYS: dict[str, tuple[type, bool]] = {
    "tp_keys": (_LIST, True),
    "min_tp": (int, True),
    "micro_key": (_STR, True),
    "logprob_key": (_STR, True),
    "advice": (_STR, True),
}
TOUCHED_KEYS: dict[str, tuple[type, bool]] = {
    "id": (_STR, True),
    "label": (_STR, True),
    "nemo-rl": (_LIST, True),
    "verl": (_LIST, True),
    "demo": (_LIST, True),
}


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

        validate(data, shape, path.name)
    return data


@dataclass(frozen=True)
class StepTemplate:
    """One step as written in the catalog (placeholders unresolved)."""

    name: str
    title: str
    argv: tuple[str, ...]
    cwd: str
    kind: str
    deliverable: str
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
    on_failure: str = "stop"
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
    note: str | None = None
    launcher: bool = False


@dataclass(frozen=True)
class Variant:
    name: str
    levels: tuple[int, ...]
    title: str
    mode: str
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
class FrameworkCatalog:
    name: str
    title: str
    needs_repo: bool
    needs_bridge: bool
    overrides: str
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


def _check(table: Any, schema: dict[str, tuple[type, bool]], where: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise CatalogError(f"{where}: expected a table")
    for key, value in table.items():
        if key not in schema:
            raise CatalogError(f"{where}: unknown key {key!r}")
        want = schema[key][0]
        ok = isinstance(value, want) and not (want is int and isinstance(value, bool))
        if not ok:
            raise CatalogError(f"{where}: {key!r} must be {want.__name__}, got {type(value).__name__}")
    missing = [k for k, (_, req) in schema.items() if req and k not in table]
    if missing:
        raise CatalogError(f"{where}: missing {', '.join(missing)}")
    return table


def _strs(value: Any, where: str) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in value):
        raise CatalogError(f"{where}: expected a list of strings")
    return tuple(value)


def _strmap(value: Any, where: str) -> dict[str, str]:
    if not all(isinstance(v, str) for v in value.values()):
        raise CatalogError(f"{where}: values must be strings")
    return dict(value)


def _step(raw: Any, where: str) -> StepTemplate:
    t = _check(raw, STEP_KEYS, where)
    where = f"{where} {t['name']!r}"
    if t["kind"] not in KINDS:
        raise CatalogError(f"{where}: kind must be one of {KINDS}")
    if t["deliverable"] not in DELIVERABLES:
        raise CatalogError(f"{where}: deliverable must be one of {DELIVERABLES}")
    if t.get("on_failure", "stop") not in ("stop", "continue"):
        raise CatalogError(f"{where}: on_failure must be stop or continue")
    if not t["argv"]:
        raise CatalogError(f"{where}: argv is empty")
    kw: dict[str, Any] = {}
    for key, value in t.items():
        want = STEP_KEYS[key][0]
        if key == "when_levels":
            kw[key] = tuple(int(v) for v in value)
        elif want is list:
            kw[key] = _strs(value, f"{where}.{key}")
        elif want is dict:
            kw[key] = _strmap(value, f"{where}.{key}")
        else:
            kw[key] = value
    return StepTemplate(**kw)


def _variant(raw: Any, where: str, step_names: set[str]) -> Variant:
    t = _check(raw, VARIANT_KEYS, where)
    where = f"{where} {t['name']!r}"
    if t["mode"] not in VARIANT_MODES:
        raise CatalogError(f"{where}: mode must be one of {VARIANT_MODES}")
    steps = tuple(_step(s, f"{where} step") for s in t.get("steps", []))
    if t["mode"] == "add" and not steps:
        raise CatalogError(f"{where}: mode 'add' needs [[variants.steps]]")
    targets = _strs(t.get("targets", []), f"{where}.targets")
    if t["mode"] in ("modify", "rerun"):
        if not targets:
            raise CatalogError(f"{where}: mode {t['mode']!r} needs targets")
        for name in targets:
            if not name.startswith("*") and name not in step_names:
                raise CatalogError(f"{where}: target {name!r} is not a level step")
    return Variant(
        name=t["name"],
        levels=tuple(int(v) for v in t["levels"]),
        title=t["title"],
        mode=t["mode"],
        proves=t["proves"],
        targets=targets,
        args=_strs(t.get("args", []), f"{where}.args"),
        env=_strmap(t.get("env", {}), f"{where}.env"),
        criteria=_strs(t.get("criteria", []), where),
        report_metrics=_strs(t.get("report_metrics", []), where),
        needs_model=bool(t.get("needs_model", False)),
        steps=steps,
        note=t.get("note"),
    )


def catalog_path(name: str) -> Path:
    return CATALOG_DIR / f"{name.replace('-', '_')}.toml"


def parse_framework(data: dict[str, Any], source: str = "<catalog>") -> FrameworkCatalog:
    """Validate one framework's parsed TOML and build its catalog."""
    fw = _check(data.get("framework"), FRAMEWORK_KEYS, f"{source} [framework]")
    known = {
        "framework",
        "placeholders",
        "run_env",
        "before_train",
        "setup",
        "levels",
        "variants",
        "tp_guard",
    }
    extra = set(data) - known
    if extra:
        raise CatalogError(f"{source}: unknown table(s) {sorted(extra)}")
    if fw["overrides"] not in ("hydra", "none"):
        raise CatalogError(f"{source} [framework]: overrides must be 'hydra' or 'none'")
    levels = []
    for raw in data.get("levels", []):
        t = _check(raw, LEVEL_KEYS, f"{source} [[levels]]")
        steps = tuple(_step(s, f"{source} level {t['number']} step") for s in t.get("steps", []))
        levels.append(
            Level(
                number=t["number"],
                title=t["title"],
                required_when=t["required_when"],
                proves=t["proves"],
                gpus=t["gpus"],
                requires_variant=bool(t.get("requires_variant", False)),
                steps=steps,
            )
        )
    numbers = [lv.number for lv in levels]
    if len(set(numbers)) != len(numbers):
        raise CatalogError(f"{source}: duplicate level numbers")
    step_names = {s.name for lv in levels for s in lv.steps}
    variants = tuple(_variant(v, f"{source} [[variants]]", step_names) for v in data.get("variants", []))
    for v in variants:
        bad = [n for n in v.levels if n not in numbers]
        if bad:
            raise CatalogError(f"{source}: variant {v.name!r} names unknown level(s) {bad}")
    names = [s.name for lv in levels for s in lv.steps] + [s.name for v in variants for s in v.steps]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise CatalogError(f"{source}: duplicate step names {sorted(dupes)}")
    guard = None
    if "tp_guard" in data:
        g = _check(data["tp_guard"], TP_GUARD_KEYS, f"{source} [tp_guard]")
        guard = TPGuard(
            tp_keys=_strs(g["tp_keys"], "tp_keys"),
            min_tp=g["min_tp"],
            micro_key=g["micro_key"],
            logprob_key=g["logprob_key"],
            advice=g["advice"],
        )
    return FrameworkCatalog(
        name=fw["name"],
        title=fw["title"],
        needs_repo=fw["needs_repo"],
        needs_bridge=fw["needs_bridge"],
        overrides=fw["overrides"],
        run_label=fw["run_label"],
        repo_env=fw.get("repo_env"),
        pythonpath=_strs(fw.get("pythonpath", []), "pythonpath"),
        pass_env=_strs(fw.get("pass_env", []), "pass_env"),
        model_args=_strs(fw.get("model_args", []), "model_args"),
        model_path_args=_strs(fw.get("model_path_args", []), "model_path_args"),
        model_env=_strmap(fw.get("model_env", {}), "model_env"),
        model_path_env=_strmap(fw.get("model_path_env", {}), "model_path_env"),
        gpus_advice=fw.get("gpus_advice", ""),
        launcher=_strs(fw.get("launcher", []), "launcher"),
        launcher_off=_strmap(fw.get("launcher_off", {}), "launcher_off"),
        placeholders=_strmap(data.get("placeholders", {}), f"{source} [placeholders]"),
        run_env=_strmap(data.get("run_env", {}), f"{source} [run_env]"),
        before_train=tuple(_step(s, f"{source} [[before_train]]") for s in data.get("before_train", [])),
        setup=tuple(_step(s, f"{source} [[setup]]") for s in data.get("setup", [])),
        levels=tuple(sorted(levels, key=lambda lv: lv.number)),
        variants=variants,
        tp_guard=guard,
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
    from console.catalog.schema import GuidanceCatalog

    areas = []
    for raw in load_toml("guidance", GuidanceCatalog).get("touched", []):
        t = _check(raw, TOUCHED_KEYS, "guidance.toml [[touched]]")
        levels = {fw: tuple(int(n) for n in t[fw]) for fw in ("nemo-rl", "verl", "demo")}
        areas.append(TouchedArea(id=t["id"], label=t["label"], levels=levels))
    return tuple(areas)
