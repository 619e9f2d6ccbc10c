"""Check results: the `{"id", "status", "evidence", "advice", "remedy"}` entries of doctor JSON."""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from console.catalog import CatalogError
from console.doctor.catalog import doctor_catalog
from console.doctor.model import Check, Remedy, Status

T = TypeVar("T")
STATUSES: tuple[Status, ...] = ("ok", "warn", "block")  # best to worst
STATUS_RANK = {s: i for i, s in enumerate(STATUSES)}
NOT_APPLICABLE_DEMO = "not applicable to the demo"


def make_remedy(
    env: dict[str, str] | None = None,
    unset: Iterable[str] = (),
    overrides: Iterable[str] = (),
    commands: Iterable[list[str]] = (),
) -> Remedy:
    """The remedy shape shared with triage: env to set, names to unset, Hydra overrides, commands."""
    return {
        "env": dict(env or {}),
        "unset": list(unset),
        "overrides": list(overrides),
        "commands": [list(c) for c in commands],
    }


def merge_remedies(remedies: Iterable[Remedy]) -> Remedy:
    out = make_remedy()
    commands = out.setdefault("commands", [])
    for r in remedies:
        out["env"].update(r.get("env") or {})
        _add_new(out["unset"], r.get("unset") or [])
        _add_new(out["overrides"], r.get("overrides") or [])
        _add_new(commands, r.get("commands") or [])
    return out


def _add_new(into: list[T], items: Iterable[T]) -> None:
    for item in items:
        if item not in into:
            into.append(item)


class _Facts(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def advice_for(check_id: str, case: str, **facts: Any) -> tuple[Status, str]:
    """(status, advice) of a case of a check, from the catalog."""
    entry = doctor_catalog()["checks"][check_id][case]
    if isinstance(entry, str):
        raise CatalogError(f"doctor.toml: checks.{check_id}.{case} is a string, not a case table")
    advice = string.Formatter().vformat(entry.get("advice", ""), (), _Facts(facts))
    return entry["status"], advice


@dataclass
class Item:
    """One finding of a check; a check with several findings reports the worst."""

    case: str
    evidence: str
    remedy: Remedy = field(default_factory=make_remedy)
    facts: dict[str, Any] = field(default_factory=dict)


def finding(check_id: str, case: str, evidence: str, remedy: Remedy | None = None, **facts: Any) -> Check:
    status, advice = advice_for(check_id, case, **facts)
    return {
        "id": check_id,
        "status": status,
        "evidence": evidence,
        "advice": advice,
        "remedy": remedy or make_remedy(),
    }


def combine(check_id: str, items: list[Item]) -> Check:
    """Fold several findings into one check entry: worst status, all evidence, non-ok advice."""
    if not items:
        return finding(check_id, "ok", "nothing to check")
    graded = [(item, *advice_for(check_id, item.case, **item.facts)) for item in items]
    status = max((g[1] for g in graded), key=STATUS_RANK.__getitem__)
    evidence = "; ".join(item.evidence for item, _, _ in graded if item.evidence)
    advice = " ".join(dict.fromkeys(adv for item, st, adv in graded if st != "ok" and adv))
    remedy = merge_remedies(item.remedy for item, st, _ in graded if st != "ok")
    return {"id": check_id, "status": status, "evidence": evidence, "advice": advice, "remedy": remedy}


def overall_verdict(checks: Sequence[Mapping[str, Any]]) -> Status:
    return STATUSES[max((STATUS_RANK.get(c["status"], 2) for c in checks), default=0)]
