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

from console.catalog import CATALOG_DIR, CatalogError
from console.catalog.schema import ProgressCatalog, ProgressPatternEntry, load_checked

PROGRESS_TOML = CATALOG_DIR / "progress.toml"
KINDS = ("progress", "total", "complete")
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


def _pattern(t: ProgressPatternEntry, where: str) -> ProgressPattern:
    where = f"{where} {t['id']}"
    if not t["literals"] or not all(t["literals"]):
        raise CatalogError(f"{where}: literals must be a non-empty list of non-empty strings")
    try:
        regex = re.compile(t["regex"])
    except re.error as exc:
        raise CatalogError(f"{where}: bad regex: {exc}") from None
    group = _GROUP.get(t["kind"])
    if group and group not in regex.groupindex:
        raise CatalogError(f"{where}: a {t['kind']} regex needs a (?P<{group}>...) group")
    fields: dict[str, Any] = {
        **t,
        "literals": tuple(t["literals"]),
        "regex": regex,
        "reason": t.get("reason") or t["id"],
    }
    return ProgressPattern(**fields)  # the entry's keys are the pattern's fields


def load_progress_patterns(path: Path | None = None) -> tuple[ProgressPattern, ...]:
    path = path or PROGRESS_TOML
    data = load_checked(path, ProgressCatalog)
    patterns = tuple(_pattern(t, f"{path.name} pattern[{i}]") for i, t in enumerate(data["pattern"]))
    ids = [p.id for p in patterns]
    if len(set(ids)) != len(ids):
        raise CatalogError(f"{path.name}: duplicate pattern ids")
    return patterns


@cache
def progress_patterns() -> tuple[ProgressPattern, ...]:
    return load_progress_patterns()


class FrameworkPatterns:
    """One framework's patterns, tried in one pass per line: a regex only where its literal is."""

    def __init__(self, framework: str) -> None:
        self.by_id = {p.id: p for p in progress_patterns() if p.framework == framework}
        self.completions = tuple(p for p in self.by_id.values() if p.kind == "complete")
        self._by_literal = tuple((lit, p) for p in self.by_id.values() for lit in p.literals)

    def matches(self, text: str) -> dict[str, re.Match[str]]:
        """The patterns that match ``text``, by id (usually none: a loop of ``in`` tests)."""
        out: dict[str, re.Match[str]] = {}
        for lit, p in self._by_literal:
            if lit in text and p.id not in out:
                m = p.regex.search(text)
                if m is not None:
                    out[p.id] = m
        return out
