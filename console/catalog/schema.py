"""The shapes of the catalog's data files, and one check that a parsed file has them.

``validate(data, Shape, "doctor.toml")`` walks the parsed TOML against ``Shape``: an unknown key, a
missing required key or a value of the wrong type is a ``CatalogError`` naming the file and the
dotted key (``doctor.toml: checks.gpus.ok.status: expected str, got int``). A shape is a TypedDict
(the dict comes back) or a frozen dataclass of ``console.catalog`` (built from the table: its fields
with a default are the optional keys, a ``tuple[X, ...]`` is a TOML list). A new data file declares
its TypedDict here and adds it to ``SHAPES``; the shapes are the loaders' return types, so the type
checker holds the code that reads a file to the keys the file is checked for. (``console.catalog``
and ``console.triage.rules`` then check what a shape cannot say: step names, class ids, regexes.)

No ``from __future__ import annotations`` here: Python 3.11 computes ``__required_keys__`` from the
evaluated annotations only.
"""

import dataclasses
import types
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import (
    Any,
    Literal,
    NotRequired,
    TypedDict,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from console.catalog import CatalogError, FrameworkInfo, Level, StepTemplate, TPGuard, Variant, load_toml

T = TypeVar("T")

# ---------------------------------------------------------------- the check


def load_checked(name: str | Path, shape: Callable[..., T]) -> T:
    """Catalog file ``name`` (``"doctor"``) as ``load_toml`` reads it, checked against ``shape`` (a
    TypedDict) once per version of the file, typed as ``shape``."""
    return cast(T, load_toml(name, shape))


def _name(shape: Any) -> str:
    if _is_table(shape):
        return "table"
    origin = get_origin(shape)
    if origin in (list, tuple):
        return f"list of {_name(get_args(shape)[0])}"
    if origin is Literal:
        return " or ".join(repr(a) for a in get_args(shape))
    if origin in (Union, types.UnionType):
        return " or ".join(_name(a) for a in get_args(shape))
    return getattr(shape, "__name__", str(shape))


def _fail(source: str, where: str, shape: Any, value: Any) -> CatalogError:
    got = "table" if isinstance(value, dict) else type(value).__name__
    return CatalogError(f"{source}: {where or 'top level'}: expected {_name(shape)}, got {got}")


def validate(value: Any, shape: Any, source: str, where: str = "") -> Any:
    """``value`` as ``shape`` (a TypedDict, a dataclass, or a type such as ``dict[str, X]``), else a
    ``CatalogError`` naming ``source`` and the first key (below ``where``) that does not fit."""
    if shape is Any:
        return value
    built_by_class = dataclasses.is_dataclass(shape)
    if is_typeddict(shape) or built_by_class:
        if not isinstance(value, dict):
            raise _fail(source, where, shape, value)
        hints, required = _fields(shape)
        built = {}
        for key, item in value.items():
            if key not in hints:
                raise CatalogError(f"{source}: {_join(where, key)}: unknown key")
            built[key] = validate(item, hints[key], source, _join(where, key))
        missing = [k for k in required if k not in value]
        if missing:
            raise CatalogError(f"{source}: {where or 'top level'}: missing key {', '.join(missing)}")
        return shape(**built) if built_by_class else built
    origin = get_origin(shape)
    if origin in (Union, types.UnionType):
        errors = []
        for option in get_args(shape):
            try:
                return validate(value, option, source, where)
            except CatalogError as exc:
                errors.append((option, exc))
        # a table that fails its table shape: say what is wrong inside it, not "expected table"
        inside = [exc for option, exc in errors if isinstance(value, dict) == _is_table(option)]
        if len(inside) == 1:
            raise inside[0]
        raise _fail(source, where, shape, value)
    if origin is Literal:
        if value not in get_args(shape):
            raise CatalogError(f"{source}: {where}: expected {_name(shape)}, got {value!r}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise _fail(source, where, shape, value)
        item = get_args(shape)[0]
        return origin(validate(v, item, source, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(source, where, shape, value)
        _, item = get_args(shape)
        return {k: validate(v, item, source, _join(where, k)) for k, v in value.items()}
    ok = (
        isinstance(value, float | int) and not isinstance(value, bool)
        if shape is float
        else isinstance(value, shape) and (shape is bool or not isinstance(value, bool))
    )
    if not ok:
        raise _fail(source, where, shape, value)
    return value


@cache
def _fields(shape: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A shape's (key -> type, required keys): read once per shape. A dataclass field whose default
    is None is an optional key of the type it names besides None (TOML has no null)."""
    hints = get_type_hints(shape)
    if not dataclasses.is_dataclass(shape):
        return hints, tuple(sorted(shape.__required_keys__))
    fields = dataclasses.fields(shape)
    for f in fields:
        if f.default is None:
            hints[f.name] = next(a for a in get_args(hints[f.name]) if a is not types.NoneType)
    nodefault = dataclasses.MISSING
    required = [f.name for f in fields if f.default is nodefault and f.default_factory is nodefault]
    return hints, tuple(sorted(required))


def _is_table(shape: Any) -> bool:
    return is_typeddict(shape) or dataclasses.is_dataclass(shape) or get_origin(shape) is dict


def _join(where: str, key: object) -> str:
    return f"{where}.{key}" if where else str(key)


# ---------------------------------------------------------------- shared


class Remedy(TypedDict):
    """What to change before a rerun, shared by triage and doctor: env to set, names to unset, Hydra
    overrides, and (doctor) commands to run first."""

    env: dict[str, str]
    unset: list[str]
    overrides: list[str]
    commands: NotRequired[list[list[str]]]


# ---------------------------------------------------------------- nemo_rl.toml, verl.toml, demo.toml
# (the tables are the dataclasses of console.catalog; console.catalog.parse_framework then checks
# step names, level numbers and variant targets)


class FrameworkFile(TypedDict):
    framework: FrameworkInfo
    placeholders: NotRequired[dict[str, str]]
    run_env: NotRequired[dict[str, str]]
    before_train: NotRequired[list[StepTemplate]]
    setup: NotRequired[list[StepTemplate]]
    levels: NotRequired[list[Level]]
    variants: NotRequired[list[Variant]]
    tp_guard: NotRequired[TPGuard]


# ---------------------------------------------------------------- doctor.toml


class DoctorDefaults(TypedDict):
    import_timeout_s: float
    ray_timeout_s: float
    hf_load_timeout_s: float
    fingerprint_timeout_s: float
    interpreter_timeout_s: float
    uv_dry_run_timeout_s: float
    uv_flag_sets: int
    parallel: int
    model: dict[str, str]  # framework -> HF model id
    gpus: dict[str, int]  # framework -> GPUs a run needs


class WrapperModel(TypedDict):
    role: str
    default: NotRequired[str]
    key: NotRequired[str]  # the Hydra key that names the model
    env: NotRequired[str]  # the variable the wrapper reads it from


class WrapperScript(TypedDict):
    script: str
    models: list[WrapperModel]


class DoctorPaths(TypedDict):
    nemo_rl_vendored_bridge: str
    mcore_in_bridge: str
    mcore_helpers_dir: str
    nemo_rl_fingerprint_file: str
    nemo_rl_fingerprint_script: str
    verl_wrapper: str
    verl_gsm8k_prep: str
    verl_train_files: str
    verl_val_files: str
    verl_rm_model_path: str
    verl_model_path: str


class DoctorDisk(TypedDict):
    weights_bytes_per_param: float
    checkpoint_bytes_per_param: float
    estimate_margin: float
    warn_factor: float
    min_free_gib: dict[str, float]
    checkpoint_levels: dict[str, list[int]]
    checkpoint_dir_overrides: list[str]
    checkpoint_default_dir: dict[str, str]


class DoctorGpus(TypedDict):
    blackwell_major: int
    megatron_generation_levels: dict[str, list[int]]


class CheckCase(TypedDict):
    status: Literal["ok", "warn", "block"]
    advice: str


class DoctorUv(TypedDict):
    sync_flags: list[str]
    sync_value_flags: list[str]
    run_value_flags: list[str]


class DoctorRemedies(TypedDict):
    torch_cuda_arch_list: str


class DoctorCatalog(TypedDict):
    defaults: DoctorDefaults
    # framework -> argv; verl_uv_when: variable -> the values that make verl's wrapper use uv
    interpreters: dict[str, list[str] | dict[str, list[str]]]
    uv: DoctorUv
    versions: dict[str, list[str]]  # label -> distribution names
    # verified: framework -> commit; a framework -> its wrappers' models
    wrapper_models: dict[str, list[WrapperScript] | dict[str, str]]
    paths: DoctorPaths
    disk: DoctorDisk
    gpus: DoctorGpus
    checks: dict[str, dict[str, CheckCase | str]]  # check id -> case -> status/advice (and "title")
    remedies: DoctorRemedies


# ---------------------------------------------------------------- compare.toml


@dataclasses.dataclass
class CompareDefaults:
    """compare.toml's [defaults], also the base of ``console.compare.tolerances.Rules``."""

    last_k: int
    min_steps: int
    regress_rel: float
    regress_abs: float
    gpu_regress_rel: float
    gpu_regress_bytes: float
    ignore_override_keys: list[str]
    seed_key_suffixes: list[str]
    change_variants: list[str]


class MetricEntry(TypedDict):
    names: list[str]
    rel: NotRequired[float]
    abs: NotRequired[float]
    judge: NotRequired[bool]
    seed_rel: NotRequired[float]
    seed_abs: NotRequired[float]


class TimingEntry(TypedDict):
    names: list[str]
    label: NotRequired[str]
    better: NotRequired[Literal["lower", "higher"]]


class CompareFramework(TypedDict):
    inherit: NotRequired[str]
    metrics: NotRequired[dict[str, MetricEntry]]
    timing: NotRequired[dict[str, TimingEntry]]


class CompareCatalog(TypedDict):
    defaults: CompareDefaults
    frameworks: dict[str, CompareFramework]


# ---------------------------------------------------------------- slurm.toml

SlurmState = TypedDict(
    "SlurmState",
    {
        "phase": Literal["queued", "active", "done"],
        # "steps": the steps decide (as a local run's would)
        "verdict": NotRequired[Literal["steps", "Pass", "Fail", "Blocked", "Cancelled"]],
        "class": NotRequired[str],
        "advice": NotRequired[str],
    },
)
SlurmOutcome = TypedDict(
    "SlurmOutcome",
    {"verdict": Literal["Fail", "Blocked"], "class": NotRequired[str], "advice": NotRequired[str]},
)


class SlurmPending(TypedDict):
    never_runs: list[str]
    advice: str
    grace_s: NotRequired[float]


class SlurmClass(TypedDict):
    title: str
    verdict: str
    advice: str


SlurmLaunchFailure = TypedDict(
    "SlurmLaunchFailure", {"class": str, "exit_codes": list[int], "patterns": list[str]}
)


class SlurmCatalog(TypedDict):
    states: dict[str, SlurmState]
    failed_before_any_step: SlurmOutcome
    pending: SlurmPending
    classes: NotRequired[dict[str, SlurmClass]]
    launch_failure: SlurmLaunchFailure


# ---------------------------------------------------------------- redaction.toml


class RedactionCatalog(TypedDict):
    secret_words: list[str]
    secret_fragments: NotRequired[list[str]]
    not_secret: NotRequired[list[str]]


# ---------------------------------------------------------------- triage_rules.toml
# (console.triage.rules then checks what a shape cannot say: class ids, verdicts, regexes)


class TriageRemedy(TypedDict):
    env: NotRequired[dict[str, str]]
    overrides: NotRequired[list[str]]
    unset: NotRequired[list[str]]


class TriageByFramework(TypedDict):
    advice: NotRequired[str]
    remedy: NotRequired[TriageRemedy]


class TriageClass(TypedDict):
    title: NotRequired[str]
    verdict: str
    tier: NotRequired[int]
    advice: NotRequired[str]
    remedy: NotRequired[TriageRemedy]
    by_framework: NotRequired[dict[str, TriageByFramework]]
    explains: NotRequired[list[str]]


TriageMarker = TypedDict(
    "TriageMarker",
    {
        "id": str,
        "kind": str,
        "literals": list[str],
        "regex": str,
        "complete_at_total": NotRequired[bool],
        "min_step": NotRequired[int],
        "tag": NotRequired[str],
        "class": NotRequired[str],
        "upgrades": NotRequired[list[str]],
        "window": NotRequired[int],
    },
)
TriageRule = TypedDict(
    "TriageRule",
    {
        "id": str,
        "class": str,
        "literals": list[str],
        "regex": str,
        "advice": NotRequired[str],
        "remedy": NotRequired[TriageRemedy],
        "soft": NotRequired[bool],
        "tier": NotRequired[int],
        "confidence": NotRequired[float],
        "transient": NotRequired[bool],
        "counts_at_end": NotRequired[bool],
        "frameworks": NotRequired[list[str]],
        "context": NotRequired[str],
        "min_count": NotRequired[int],
        "verdict": NotRequired[str],
        "upgrades": NotRequired[list[str]],
    },
)
TriageException = TypedDict(
    "TriageException",
    {
        "id": str,
        "class": str,
        "type": str,
        "message": NotRequired[str],
        "tier": NotRequired[int],
        "confidence": NotRequired[float],
        "verdict": NotRequired[str],
        "also": NotRequired[list[str]],  # other classes the same exception fits
        "after_frames": NotRequired[bool],  # a weak guess: the traceback's frame rules go first
        "library_caller": NotRequired[str],  # the class when an installed package made the failing call
        "stack_caller": NotRequired[str],  # the class when the Megatron/Bridge/NeMo-RL stack made it
    },
)
TriageComponent = TypedDict(
    "TriageComponent", {"id": str, "class": str, "regex": str, "verdict": NotRequired[str]}
)
TriageFrameRule = TypedDict(
    "TriageFrameRule",
    {
        "id": str,
        "class": str,
        "regex": str,
        "upgrades": NotRequired[list[str]],
        "verdict": NotRequired[str],
        "last": NotRequired[int],
        "unterminated": NotRequired[bool],
        "sources": NotRequired[bool],
        "tier": NotRequired[int],
        "confidence": NotRequired[float],
    },
)


class TriageImports(TypedDict):
    bridge_modules: NotRequired[list[str]]
    bridge_max_depth: NotRequired[int]
    venv_paths: NotRequired[str]
    installed_paths: NotRequired[str]
    bridge_paths: NotRequired[str]
    launcher_modules: NotRequired[list[str]]
    env_roots: NotRequired[str]
    home_roots: NotRequired[str]
    entry_points: NotRequired[list[str]]


class TriageLimitation(TypedDict):
    id: str
    when: str
    text: str
    pattern: NotRequired[str]


class TriageRulesCatalog(TypedDict):
    version: NotRequired[int]
    frameworks: NotRequired[dict[str, list[str]]]
    classes: dict[str, TriageClass]
    marker: NotRequired[list[TriageMarker]]
    rule: NotRequired[list[TriageRule]]
    exception: NotRequired[list[TriageException]]
    component: NotRequired[list[TriageComponent]]
    imports: NotRequired[TriageImports]
    frame_rule: NotRequired[list[TriageFrameRule]]
    learning_levels: NotRequired[dict[str, int]]
    limitation: NotRequired[list[TriageLimitation]]


# ---------------------------------------------------------------- guidance.toml

TouchedEntry = TypedDict(
    "TouchedEntry",
    {"id": str, "label": str, "nemo-rl": list[int], "verl": list[int], "demo": list[int]},
)


class GuidanceCatalog(TypedDict):
    touched: list[TouchedEntry]


# ---------------------------------------------------------------- progress.toml
# (console.catalog.progress then checks the regexes' groups)


class ProgressPatternEntry(TypedDict):
    id: str
    framework: Literal["nemo-rl", "verl", "megatron"]
    kind: Literal["progress", "total", "complete"]
    literals: list[str]
    regex: str
    min_step: NotRequired[int]
    complete_at_total: NotRequired[bool]
    reason: NotRequired[str]


class ProgressCatalog(TypedDict):
    pattern: list[ProgressPatternEntry]


# ---------------------------------------------------------------- stall.toml
# (console.triage.stall then checks the regexes)


@dataclasses.dataclass(frozen=True)
class StallPhase:
    id: str
    title: str
    active: str  # regexes, searched as they are (re's own cache compiles them once)
    start: str = "(?!)"  # (?!) matches nothing: a phase with no start or done line
    done: str = "(?!)"
    within: int = 1
    confidence: float = 0.5
    advice: str | None = None


class StallCatalog(TypedDict):
    version: NotRequired[int]
    tail_bytes: int
    ended: str
    skip: str
    phase: tuple[StallPhase, ...]


# Every data file of the catalog folder but the framework catalogs (``[framework]`` files, each a
# ``FrameworkFile``, checked by ``console.catalog.parse_framework``), with its shape.
SHAPES: dict[str, Any] = {
    "compare.toml": CompareCatalog,
    "doctor.toml": DoctorCatalog,
    "guidance.toml": GuidanceCatalog,
    "progress.toml": ProgressCatalog,
    "redaction.toml": RedactionCatalog,
    "slurm.toml": SlurmCatalog,
    "stall.toml": StallCatalog,
    "triage_rules.toml": TriageRulesCatalog,
}
