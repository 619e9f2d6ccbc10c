"""Training progress and completion patterns (``console/catalog/progress.toml``).

Read by the live progress parsers (``console/monitor/progress_*.py``) and, one marker per pattern,
by triage (``console/triage/rules.py``): both see a step, a total and a completion in the same lines.
An unknown key, a bad kind or a regex without the group its kind needs is a ``CatalogError``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from console.catalog import CATALOG_DIR, CatalogError, load_toml

PROGRESS_TOML = CATALOG_DIR / "progress.toml"
KINDS = ("progress", "total", "complete")
FRAMEWORKS = ("nemo-rl", "verl", "megatron")
_KEYS = {"id", "framework", "kind", "literals", "regex", "min_step", "complete_at_total", "reason"}
_GROUP = {"progress": "step", "total": "total"}


@dataclass(frozen=True)
class ProgressPattern:
    id: str
    framework: str
    kind: str  # progress | total | complete
    literals: tuple[str, ...]
    regex: re.Pattern[str]
    min_step: int = 0  # a lower step is not a training step (verl's step:0 is validation)
    complete_at_total: bool = False
    reason: str = ""  # what the live parser's ``complete`` event says

    def search(self, text: str) -> re.Match[str] | None:
        """The regex's match when one of the literals is in ``text`` (the cheap test first)."""
        for lit in self.literals:  # a loop, not any(<generator>): this runs for every log line
            if lit in text:
                return self.regex.search(text)
        return None

    def as_marker(self) -> dict[str, Any]:
        """This pattern as a ``[[marker]]`` table of the triage catalog."""
        return {
            "id": self.id,
            "kind": self.kind,
            "literals": list(self.literals),
            "regex": self.regex.pattern,
            "min_step": self.min_step,
            "complete_at_total": self.complete_at_total,
        }


def _pattern(raw: Any, where: str) -> ProgressPattern:
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: must be a table")
    unknown = set(raw) - _KEYS
    if unknown:
        raise CatalogError(f"{where}: unknown keys {sorted(unknown)}")
    if not isinstance(raw.get("id"), str) or not raw["id"]:
        raise CatalogError(f"{where}: id missing")
    kind, framework = raw.get("kind"), raw.get("framework")
    if kind not in KINDS:
        raise CatalogError(f"{where}: kind must be one of {KINDS}")
    if framework not in FRAMEWORKS:
        raise CatalogError(f"{where}: framework must be one of {FRAMEWORKS}")
    literals = raw.get("literals")
    if not isinstance(literals, list) or not literals or not all(isinstance(x, str) and x for x in literals):
        raise CatalogError(f"{where}: literals must be a non-empty list of strings")
    try:
        regex = re.compile(str(raw.get("regex") or ""))
    except re.error as exc:
        raise CatalogError(f"{where}: bad regex: {exc}") from None
    group = _GROUP.get(kind)
    if not regex.pattern or (group and group not in regex.groupindex):
        raise CatalogError(f"{where}: a {kind} regex needs a (?P<{group}>...) group")
    min_step, at_total = raw.get("min_step", 0), raw.get("complete_at_total", False)
    if (
        not isinstance(min_step, int)
        or not isinstance(at_total, bool)
        or not isinstance(raw.get("reason", ""), str)
    ):
        raise CatalogError(f"{where}: min_step must be an integer, complete_at_total a boolean, reason text")
    return ProgressPattern(
        id=raw["id"],
        framework=framework,
        kind=kind,
        literals=tuple(literals),
        regex=regex,
        min_step=min_step,
        complete_at_total=at_total,
        reason=raw.get("reason") or raw["id"],
    )


def load_progress_patterns(path: Path | None = None) -> tuple[ProgressPattern, ...]:
    path = path or PROGRESS_TOML
    data = load_toml(path)
    unknown = set(data) - {"pattern"}
    if unknown:
        raise CatalogError(f"{path.name}: unknown tables {sorted(unknown)}")
    patterns = tuple(
        _pattern(
            raw, f"{path.name} pattern[{i}] {raw.get('id', '?') if isinstance(raw, dict) else ''}".rstrip()
        )
        for i, raw in enumerate(data.get("pattern") or [])
    )
    ids = [p.id for p in patterns]
    if len(set(ids)) != len(ids):
        raise CatalogError(f"{path.name}: duplicate pattern ids")
    return patterns


@cache
def progress_patterns() -> tuple[ProgressPattern, ...]:
    return load_progress_patterns()


def patterns_of(framework: str) -> dict[str, ProgressPattern]:
    """The patterns of one framework, by id."""
    return {p.id: p for p in progress_patterns() if p.framework == framework}
