"""`catalog_drift`: does every step of the plan find its script, test file, config and keys?

The plan builder resolves each step against the user's checkouts (console/plan/resolve.py); this
check shows those findings, and the upstream commits the catalog was last verified against next to
the checkouts' own commits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from console.doctor.context import DoctorContext
from console.doctor.gitinfo import full_head
from console.doctor.model import Check
from console.doctor.result import NOT_APPLICABLE_DEMO, Item, combine, finding
from console.plan.resolve import load_manifest

CHECK_ID = "catalog_drift"


def verified_line(framework: str, repo: Any, bridge: Any) -> str:
    """'catalog verified against <fw> <commit>, Bridge <commit>; this run: <fw> <commit>, Bridge <commit>'."""
    repos = load_manifest().get("repos", {})
    pairs = [
        (framework, repos.get(framework, {}), repo),
        ("Bridge", repos.get("bridge", {}), bridge),
    ]
    ref = ", ".join(f"{name} {str(info.get('commit') or '?')[:12]}" for name, info, _ in pairs)
    mine = ", ".join(
        f"{name} {(full_head(Path(path)) or '?')[:12] if path else 'not given'}" for name, _, path in pairs
    )
    return f"catalog verified against upstream {ref}; checkouts here: {mine}"


def check_catalog_drift(ctx: DoctorContext) -> Check:
    if ctx.is_demo:
        return finding(CHECK_ID, "not_applicable", NOT_APPLICABLE_DEMO)
    drift = list((ctx.plan or {}).get("drift") or [])
    allowed = bool((ctx.spec.extra or {}).get("allow_drift"))
    items = [Item("verified", verified_line(ctx.framework, ctx.repo, ctx.bridge))]
    if ctx.plan is None:
        items.append(Item("no_plan", "no plan was built (a checkout is missing), nothing resolved"))
    items += [Item("allowed" if allowed else "drift", str(d.get("message") or d)) for d in drift]
    return combine(CHECK_ID, items)
