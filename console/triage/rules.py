"""Load and validate the triage rule catalog (``console/catalog/triage_rules.toml``)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from console.catalog import CATALOG_DIR, CatalogError, load_toml
from console.catalog.progress import KINDS as PROGRESS_KINDS
from console.catalog.progress import progress_patterns
from console.catalog.schema import Remedy, TriageRemedy, TriageRulesCatalog

CATALOG = CATALOG_DIR / "triage_rules.toml"

# The class ids of DESIGN.md (plus the Noise pseudo-class). The catalog must cover every one.
CLASS_IDS = (
    "rocr_visible_devices",
    "hf_rate_limit",
    "hf_offline_missing",
    "no_space",
    "missing_dependency",
    "bridge_import",
    "container_venv_mismatch",
    "ray_cluster",
    "nccl",
    "config_error",
    "tp_accuracy_guard",
    "data_missing",
    "cuda_oom",
    "cuda_graph_crash",
    "checkpoint_failure",
    "metric_failure",
    "generation_failure",
    "teardown_crash",
    "hang",
    "unknown_error",
    "catalog_drift",
    "cuda_error",
    "cancelled",
)
NOISE_CLASS = "shutdown_noise"
VERDICTS = ("Fail", "Blocked", "Cancelled", "Noise")
MARKER_KINDS = ("progress", "total", "complete", "context", "evidence", "fatal", "exiting")
CLASS_KEY = {"key": "class"}  # the TOML key of a field named otherwise (``class`` is a keyword)
T = TypeVar("T")


class FrameworkAdvice(TypedDict, total=False):
    """A class's advice and remedy for one framework, where they differ from its own."""

    advice: str
    remedy: Remedy


@dataclass(frozen=True)
class ClassInfo:
    id: str
    title: str
    verdict: str
    tier: int
    advice: str
    remedy: Remedy
    by_framework: dict[str, FrameworkAdvice] = field(default_factory=dict)
    explains: tuple[str, ...] = ()  # classes this one explains when both are found (it wins)

    def advice_for(self, framework: str) -> str:
        return self.by_framework.get(framework, {}).get("advice", self.advice)

    def remedy_for(self, framework: str) -> Remedy:
        return self.by_framework.get(framework, {}).get("remedy", self.remedy)


@dataclass(frozen=True)
class Rule:
    id: str
    cls: str = field(metadata=CLASS_KEY)
    verdict: str
    literals: tuple[str, ...]
    regex: re.Pattern[str]
    advice: str | None = None
    remedy: Remedy | None = None
    soft: bool = False
    context: str | None = None
    frameworks: tuple[str, ...] = ()
    tier: int | None = None
    transient: bool = False  # retried/benign on its own: counts only when the run then fails
    counts_at_end: bool = False  # transient, but the cause when a finished log ends on it (still retrying)
    confidence: float = 0.9
    min_count: int = 1  # counts as a failure only once seen this many times (a repeated wait)


@dataclass(frozen=True)
class ExceptionRule:
    """The type (and optionally the message) of a root-cause exception names a class."""

    id: str
    cls: str = field(metadata=CLASS_KEY)
    verdict: str
    type_re: re.Pattern[str] = field(metadata={"key": "type"})
    message_re: re.Pattern[str] | None = field(default=None, metadata={"key": "message"})
    tier: int | None = None
    confidence: float = 0.8
    also: tuple[str, ...] = ()  # other classes the same exception fits (reported as alternatives)
    after_frames: bool = False  # a weak type-only guess: the traceback's frame rules go first
    # the class instead (``cls`` then becomes an alternative) when the deepest frame, the one that made
    # the failing call, is in an installed package: one package calling another at a version it lacks
    library_caller: str | None = None
    # the class instead when that deepest frame is in the Megatron / Megatron-Bridge / NeMo-RL stack itself
    # ([imports] bridge_paths): the stack's own API at another version than its caller (signature drift)
    stack_caller: str | None = None


@dataclass(frozen=True)
class Component:
    """Last resort for an error line or an exception no rule named: the component it mentions."""

    id: str
    cls: str = field(metadata=CLASS_KEY)
    verdict: str
    regex: re.Pattern[str]


@dataclass(frozen=True)
class ImportPolicy:
    """How a failed import is classified: the module, then the interpreter paths around it."""

    bridge_modules: tuple[str, ...]
    bridge_max_depth: int
    venv_path_re: re.Pattern[str] | None
    installed_path_re: re.Pattern[str] | None = None  # a frame in an installed package (site-packages)
    bridge_path_re: re.Pattern[str] | None = None  # a frame in the Megatron / Bridge / NeMo-RL stack
    # installed with a launcher (Jupyter's ipykernel): missing in its child means another interpreter ran
    launcher_modules: tuple[str, ...] = ()
    # the environment (prefix) a frame's installed package lives in (group "root"), and which prefixes lie in a
    # user's home (a user site, a home venv or conda): frames from both kinds mean two environments are mixed
    env_root_re: re.Pattern[str] | None = None
    home_root_re: re.Pattern[str] | None = None


@dataclass(frozen=True)
class FrameRule:
    id: str
    cls: str = field(metadata=CLASS_KEY)
    verdict: str
    regex: re.Pattern[str]
    upgrades: tuple[str, ...] = ()  # a finding of these classes inside such frames becomes this class
    last: int = 0  # >0: only the deepest `last` frames are read (where the error was raised)
    unterminated: bool = False  # only a traceback cut before its exception line (an excerpt)
    sources: bool = False  # the regex reads each frame followed by the source line Python quotes under it
    tier: int | None = None
    confidence: float = 0.6


@dataclass(frozen=True)
class Marker:
    id: str
    kind: str
    literals: tuple[str, ...]
    regex: re.Pattern[str]
    tag: str | None = None
    complete_at_total: bool = False
    min_step: int = 0  # progress: a lower step is not a training step
    upgrades: tuple[str, ...] = ()  # context: findings of these classes near it become `cls`
    cls: str | None = field(default=None, metadata=CLASS_KEY)
    window: int = 0  # context: how many lines from it a finding is "near" (0: the engine's CONTEXT_WINDOW)


@dataclass(frozen=True)
class Catalog:
    classes: dict[str, ClassInfo]
    rules: tuple[Rule, ...]
    frame_rules: tuple[FrameRule, ...]
    markers: tuple[Marker, ...]
    frameworks: dict[str, tuple[str, ...]]
    exceptions: tuple[ExceptionRule, ...] = ()
    imports: ImportPolicy = ImportPolicy((), 2, None)
    components: tuple[Component, ...] = ()

    def literals(self) -> list[str]:
        """Every literal the prefilter needs (rules and markers), deduplicated, in a stable order."""
        seen: dict[str, None] = {}
        items: tuple[Rule | Marker, ...] = (*self.rules, *self.markers)
        for item in items:
            for lit in item.literals:
                seen.setdefault(lit, None)
        return list(seen)


def normalise_remedy(raw: TriageRemedy | None, where: str) -> Remedy:
    """A remedy of the catalog (its shape checked at load) with every key present."""
    raw = raw or {}
    env = raw.get("env", {})
    overrides = raw.get("overrides", [])
    unset = raw.get("unset", [])
    if not all("=" in o for o in overrides):
        raise CatalogError(f"{where}: remedy.overrides must be KEY=VALUE strings")
    if not all(unset):
        raise CatalogError(f"{where}: remedy.unset must be names")
    return {"env": dict(env), "overrides": list(overrides), "unset": list(unset)}


def _compile(pattern: Any, where: str) -> re.Pattern[str]:
    if not pattern:  # (a string: checked at load)
        raise CatalogError(f"{where}: regex missing")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise CatalogError(f"{where}: bad regex: {exc}") from None


def _literals(raw: Any, where: str) -> tuple[str, ...]:
    if not raw or not all(raw):  # (a list of strings: checked at load)
        raise CatalogError(f"{where}: literals must be a non-empty list of strings")
    return tuple(raw)


def _build(kind: type[T], entry: dict[str, Any], where: str, classes: dict[str, ClassInfo]) -> T:
    """A ``kind`` from its catalog entry: each field from the key of its name (or of its
    ``metadata["key"]``), lists as tuples, regexes compiled, remedies normalised, class ids known,
    the verdict by default its class's."""
    built: dict[str, Any] = {}
    for f in dataclasses.fields(kind):  # type: ignore[arg-type]
        key = f.metadata.get("key", f.name)
        if key not in entry:
            if f.name == "verdict":
                built[f.name] = classes[built["cls"]].verdict
            elif f.default is dataclasses.MISSING:
                raise CatalogError(f"{where}: {key} missing")
            continue
        value = entry[key]
        if f.name == "literals":
            value = _literals(value, where)
        elif "Pattern" in str(f.type):
            value = _compile(value, where)
        elif f.name == "remedy":
            value = normalise_remedy(value, where)
        elif f.type == "float":
            value = float(value)
        elif isinstance(value, list):
            value = tuple(value)
        named = [value] if isinstance(value, str) else value
        if f.name in ("cls", "upgrades", "also", "library_caller", "stack_caller") and not set(named) <= set(
            classes
        ):
            raise CatalogError(f"{where}: unknown class in {key} {value!r}")
        if f.name == "verdict" and value not in VERDICTS:
            raise CatalogError(f"{where}: bad verdict {value!r}")
        built[f.name] = value
    return kind(**built)


# Tokens a pattern may use, each read from a list in [imports]: (token, key, whether the items are names to escape
# rather than regex fragments). One list then serves every pattern that names the same things.
_TOKENS = (
    (
        "{bridge_modules}",
        "bridge_modules",
        True,
    ),  # the Megatron/Bridge/NeMo-RL stack, also the import decision's
    (
        "{entry_points}",
        "entry_points",
        False,
    ),  # programs an environment installs (torchrun, python[\d.]*, ...)
)
_PATTERN_SECTIONS = ("rule", "exception", "frame_rule", "marker", "component")


def _expand_tokens(data: dict[str, Any]) -> dict[str, Any]:
    """Patterns may name a list of [imports] by its token (see _TOKENS): the token reads as the list's alternation."""
    imp = data.get("imports") or {}
    alternations: dict[str, tuple[str, str | None]] = {}
    for token, key, names in _TOKENS:
        items = [re.escape(str(i)) if names else str(i) for i in imp.get(key) or ()]
        alternations[token] = (key, "(?:" + "|".join(items) + ")" if items else None)
    out = dict(data)
    for section in _PATTERN_SECTIONS:
        entries = data.get(section) or []
        expanded = []
        for entry in entries:
            for token, (key, alternation) in alternations.items():
                if not any(isinstance(v, str) and token in v for v in entry.values()):
                    continue
                if alternation is None:
                    raise CatalogError(f"{section} {entry.get('id', '?')}: {token} needs [imports] {key}")
                entry = {
                    k: v.replace(token, alternation) if isinstance(v, str) else v for k, v in entry.items()
                }
            expanded.append(entry)
        if entries:
            out[section] = expanded
    return out


def parse_catalog(data: dict[str, Any]) -> Catalog:
    data = _expand_tokens(data)
    classes: dict[str, ClassInfo] = {}
    for cid, c in (data.get("classes") or {}).items():
        where = f"classes.{cid}"
        verdict = c.get("verdict")
        if verdict not in VERDICTS:
            raise CatalogError(f"{where}: verdict must be one of {VERDICTS}")
        by_fw: dict[str, FrameworkAdvice] = {}
        for fw, extra in (c.get("by_framework") or {}).items():
            entry: FrameworkAdvice = {}
            if "advice" in extra:
                entry["advice"] = str(extra["advice"])
            if "remedy" in extra:
                entry["remedy"] = normalise_remedy(extra["remedy"], f"{where}.by_framework.{fw}")
            by_fw[fw] = entry
        classes[cid] = ClassInfo(
            id=cid,
            title=str(c.get("title", cid)),
            verdict=verdict,
            tier=int(c.get("tier", 0)),
            advice=str(c.get("advice", "")),
            remedy=normalise_remedy(c.get("remedy"), where),
            by_framework=by_fw,
            explains=tuple(c.get("explains") or ()),
        )
    missing = [c for c in (*CLASS_IDS, NOISE_CLASS) if c not in classes]
    for cid, info in classes.items():
        if any(e not in classes for e in info.explains):
            raise CatalogError(f"classes.{cid}: unknown class in explains {info.explains}")
    if missing:
        raise CatalogError(f"triage catalog lacks classes {missing}")

    rules = [
        _build(Rule, r, f"rule[{i}] {r.get('id', '?')}", classes)
        for i, r in enumerate(data.get("rule") or [])
    ]
    ids = [r.id for r in rules]
    if len(set(ids)) != len(ids) or not all(ids):
        raise CatalogError(f"rule ids must be given and unique: {sorted(i for i in ids if ids.count(i) > 1)}")
    frame_rules = [
        _build(FrameRule, r, f"frame_rule[{i}] {r.get('id', '?')}", classes)
        for i, r in enumerate(data.get("frame_rule") or [])
    ]
    markers = []
    for i, m in enumerate(data.get("marker") or []):
        where = f"marker[{i}] {m.get('id', '?')}"
        if m.get("kind") not in MARKER_KINDS:
            raise CatalogError(f"{where}: kind must be one of {MARKER_KINDS}")
        markers.append(_build(Marker, m, where, classes))
        if markers[-1].upgrades and markers[-1].cls is None:
            raise CatalogError(f"{where}: upgrades needs a known class and known classes to upgrade")
    tags = {m.tag for m in markers if m.kind == "context"}
    for r in rules:
        if r.context and r.context not in tags:
            raise CatalogError(f"rule {r.id}: context {r.context!r} has no context marker")
    frameworks = {k: tuple(v) for k, v in (data.get("frameworks") or {}).items()}
    exceptions = [
        _build(ExceptionRule, e, f"exception[{i}] {e.get('id', '?')}", classes)
        for i, e in enumerate(data.get("exception") or [])
    ]
    components = [
        _build(Component, c, f"component[{i}] {c.get('id', '?')}", classes)
        for i, c in enumerate(data.get("component") or [])
    ]
    imp = data.get("imports") or {}
    imports = ImportPolicy(
        bridge_modules=tuple(imp.get("bridge_modules") or ()),
        bridge_max_depth=int(imp.get("bridge_max_depth", 2)),
        venv_path_re=_compile(imp["venv_paths"], "imports.venv_paths") if imp.get("venv_paths") else None,
        installed_path_re=(
            _compile(imp["installed_paths"], "imports.installed_paths")
            if imp.get("installed_paths")
            else None
        ),
        bridge_path_re=_compile(imp["bridge_paths"], "imports.bridge_paths")
        if imp.get("bridge_paths")
        else None,
        launcher_modules=tuple(imp.get("launcher_modules") or ()),
        env_root_re=_compile(imp["env_roots"], "imports.env_roots") if imp.get("env_roots") else None,
        home_root_re=_compile(imp["home_roots"], "imports.home_roots") if imp.get("home_roots") else None,
    )
    return Catalog(
        classes=classes,
        rules=tuple(rules),
        frame_rules=tuple(frame_rules),
        markers=tuple(markers),
        frameworks=frameworks,
        exceptions=tuple(exceptions),
        imports=imports,
        components=tuple(components),
    )


def load_catalog(path: Path | None = None) -> Catalog:
    path = path or CATALOG
    data = dict(load_toml(path, TriageRulesCatalog))  # a copy: the loader's dict is shared
    own = [m.get("id") for m in data.get("marker") or [] if m.get("kind") in PROGRESS_KINDS]
    if own:
        raise CatalogError(f"{path.name}: progress/total/complete markers {own} belong in progress.toml")
    data["marker"] = [p.as_marker() for p in progress_patterns()] + list(data.get("marker") or [])
    return parse_catalog(data)


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    return load_catalog()
