"""`repo_state`: both checkouts' short HEAD and dirty files; NeMo-RL's vendored Bridge."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from console.doctor.context import DoctorContext
from console.doctor.gitinfo import full_head, git, repo_state
from console.doctor.model import Check
from console.doctor.result import NOT_APPLICABLE_DEMO, Item, combine, finding

CHECK_ID = "repo_state"
_REPO_VAR = {"nemo-rl": "NEMO_RL_REPO", "verl": "VERL_REPO"}


def check_repo_state(ctx: DoctorContext) -> Check:
    if ctx.is_demo:
        return finding(CHECK_ID, "not_applicable", NOT_APPLICABLE_DEMO)
    items: list[Item] = []
    bridge, repo = ctx.bridge, ctx.repo
    if bridge is None:
        items.append(Item("missing_bridge", "Bridge checkout: not given"))
    else:
        items.append(_state_item("Bridge", bridge))
    if repo is None:
        items.append(
            Item(
                "missing_repo",
                f"{ctx.framework} checkout: not given",
                facts={"framework": ctx.framework, "repo_var": _REPO_VAR[ctx.framework]},
            )
        )
    else:
        items.append(_state_item(ctx.framework, repo))
    if ctx.framework == "nemo-rl" and repo is not None and bridge is not None:
        items.append(vendored_bridge_item(ctx))
    return combine(CHECK_ID, items)


def _state_item(label: str, path: Path) -> Item:
    state = repo_state(path)
    return Item("ok" if state.head else "not_git", f"{label}: {state.describe()}", facts={"path": str(path)})


def gitlink(repo: Path, rel: str) -> str | None:
    """The commit a submodule is pinned at in ``repo``'s HEAD tree (``git ls-tree HEAD <rel>``)."""
    try:
        out = git(repo, "ls-tree", "HEAD", rel, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    return parts[2] if out.returncode == 0 and len(parts) >= 3 and parts[1] == "commit" else None


def vendored_bridge_item(ctx: DoctorContext) -> Item:
    """Is NeMo-RL's vendored `3rdparty/.../Megatron-Bridge` the checkout under test?"""
    assert ctx.repo is not None and ctx.bridge is not None
    vendored = ctx.repo / ctx.catalog["paths"]["nemo_rl_vendored_bridge"]
    facts = {"vendored": str(vendored)}
    if not vendored.exists():
        return Item("vendored_same", f"vendored Bridge: absent ({vendored})", facts=facts)
    if os.path.realpath(vendored) == os.path.realpath(ctx.bridge):
        return Item("vendored_same", "vendored Bridge: is the checkout under test (same path)", facts=facts)
    rel = ctx.catalog["paths"]["nemo_rl_vendored_bridge"]
    initialised = (vendored / ".git").exists()
    # an uninitialised submodule is an empty directory: git there answers for NeMo-RL itself, so the
    # pinned commit is the gitlink recorded in NeMo-RL's tree
    v_head = full_head(vendored) if initialised else gitlink(ctx.repo, rel)
    b_head = full_head(ctx.bridge)
    if not initialised:
        return Item(
            "vendored_differs" if v_head != b_head else "vendored_same",
            f"vendored Bridge: submodule not initialised, pinned at {(v_head or 'unknown')[:12]} "
            f"(gitlink); checkout under test @ {(b_head or 'no git')[:12]}",
            facts=facts,
        )
    if v_head is None or v_head != b_head:
        return Item(
            "vendored_differs",
            f"vendored Bridge: {vendored} @ {(v_head or 'no git')[:12]} differs from the checkout "
            f"under test @ {(b_head or 'no git')[:12]}",
            facts=facts,
        )
    v_dirty, b_dirty = repo_state(vendored).dirty, repo_state(ctx.bridge).dirty
    if sorted(v_dirty) != sorted(b_dirty):
        return Item(
            "vendored_dirty_mismatch",
            f"vendored Bridge: same commit {v_head[:12]} but local changes differ "
            f"({len(v_dirty)} vs {len(b_dirty)} dirty files)",
            facts=facts,
        )
    return Item(
        "vendored_same",
        f"vendored Bridge: same commit {v_head[:12]} and dirty files as the checkout under test",
        facts=facts,
    )
