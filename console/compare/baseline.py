"""``rl-console run SPEC... --baseline REF``: the same plan twice, Bridge at REF first, then as is.

The baseline runs from a ``git worktree add --detach`` of REF under ``<runs>/.worktrees/`` (never
the user's checkout: its files, index and HEAD stay as they are), removed when both runs ended. The
two runs are linked (``baseline_run`` in the candidate's spec and state, ``candidate_run`` in the
baseline's state), both record their Bridge commit and dirty files (``spec.extra["bridge_state"]``),
and the candidate's folder gets ``compare.json``, which its report shows as "Baseline comparison".

Exit code: the candidate's own when it did not pass, else the comparison's (0 Same, 1 Changed,
3 Inconclusive). Ctrl-C cancels the run in flight, removes the worktree and exits 130.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from console import exitcodes
from console.compare import COMPARE_JSON, VERDICT_EXIT, compare_runs
from console.compare.render import report_lines, text
from console.doctor.gitinfo import full_head, git, repo_state
from console.errors import SpecError
from console.fileio import write_json_atomic
from console.rundir.state import read_state, update_state
from console.runs.follow import follow_run
from console.spec import RunSpec

WORKTREES = ".worktrees"
Starter = Callable[[RunSpec, argparse.Namespace, Any], Path]
_git = functools.partial(git, timeout=120.0)  # a worktree of a large checkout takes a while


def resolve_ref(bridge: str, ref: str) -> str:
    """The full commit of ``ref`` in the checkout; SpecError (exit 2) when there is none."""
    if not ref or ref.startswith("-") or "\x00" in ref:
        raise SpecError(f"--baseline {ref!r}: expected a commit, branch or tag of the Bridge checkout")
    try:
        proc = _git(bridge, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpecError(f"--baseline {ref}: cannot run git ({exc})") from None
    if proc.returncode != 0 or not proc.stdout.strip():
        raise SpecError(f"--baseline {ref}: no such commit in the Bridge checkout {bridge}")
    return proc.stdout.strip()


def add_worktree(bridge: str, commit: str, runs_dir: Path) -> Path:
    """A detached worktree of ``commit`` in a fresh folder under ``<runs>/.worktrees/``."""
    parent = runs_dir / WORKTREES
    parent.mkdir(parents=True, exist_ok=True)
    holder = Path(tempfile.mkdtemp(prefix=f"baseline-{commit[:8]}-", dir=parent))
    path = holder / "bridge"
    proc = _git(bridge, "worktree", "add", "--detach", str(path), commit)
    if proc.returncode != 0:
        shutil.rmtree(holder, ignore_errors=True)
        why = (proc.stderr.strip().splitlines() or ["git worktree add failed"])[-1]
        raise SpecError(f"--baseline: cannot create a worktree of {commit[:12]}: {why}")
    return path


def submodules_at(bridge: str, commit: str) -> list[tuple[str, str]]:
    """(path, commit) of every submodule (gitlink) recorded in ``commit``."""
    proc = _git(bridge, "ls-tree", "-r", "-z", commit)
    out = []
    for entry in proc.stdout.split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[0] == "160000" and path:
            out.append((path, parts[2]))
    return out


def fill_submodules(bridge: str, worktree: Path, commit: str) -> list[str]:
    """Give the worktree REF's submodules (Megatron-Bridge's 3rdparty/Megatron-LM) with no network:
    the user's checked-out submodule when it is at REF's commit (a symlink), else a worktree of it at
    REF's commit, else (commit not available locally) the user's one, said in the returned notes."""
    notes: list[str] = []
    for rel, sha in submodules_at(bridge, commit):
        src, dst = Path(bridge) / rel, worktree / rel
        if dst.is_dir() and any(dst.iterdir()):
            continue
        if not (src / ".git").exists():
            notes.append(f"submodule {rel} is not checked out in {bridge}: the baseline has it empty")
            continue
        with contextlib.suppress(OSError):
            dst.rmdir()
        dst.parent.mkdir(parents=True, exist_ok=True)
        if (full_head(src) or "") == sha:
            dst.symlink_to(src, target_is_directory=True)
            continue
        if _git(str(src), "worktree", "add", "--detach", str(dst), sha).returncode == 0:
            notes.append(f"submodule {rel} at {sha[:12]} (a worktree of your checkout's {rel})")
            continue
        dst.symlink_to(src, target_is_directory=True)
        notes.append(
            f"submodule {rel}: REF's commit {sha[:12]} is not available locally; the baseline uses "
            f"your checkout's {rel} at {(full_head(src) or '?')[:12]}"
        )
    return notes


def remove_worktree(bridge: str, path: Path) -> None:
    """``git worktree remove --force`` then prune; the folder goes even when git cannot.

    Symlinked submodules are unlinked first (never followed), submodule worktrees pruned after."""
    subs = []
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        for rel, _ in submodules_at(bridge, "HEAD") + _worktree_submodules(path):
            dst = path / rel
            if dst.is_symlink():
                dst.unlink()
            elif (dst / ".git").is_file():
                subs.append(Path(bridge) / rel)
                _git(str(Path(bridge) / rel), "worktree", "remove", "--force", str(dst))
    try:
        _git(bridge, "worktree", "remove", "--force", str(path))
        _git(bridge, "worktree", "prune")
        for sub in subs:
            _git(str(sub), "worktree", "prune")
    except (OSError, subprocess.TimeoutExpired):
        pass
    shutil.rmtree(path.parent, ignore_errors=True)


def _worktree_submodules(path: Path) -> list[tuple[str, str]]:
    if not path.is_dir():
        return []
    try:
        return submodules_at(str(path), "HEAD")
    except (OSError, subprocess.TimeoutExpired):
        return []


def bridge_state(path: str, ref: str | None = None) -> dict[str, Any]:
    st = repo_state(Path(path))
    dirty = [line[3:].strip() if len(line) > 3 else line.strip() for line in st.dirty]
    return {"path": path, "ref": ref, "commit": full_head(Path(path)) or st.head, "dirty": dirty}


def _follow(run_dir: Path, role: str) -> None:
    print(f"--- {role} run {run_dir.name} ---", flush=True)
    follow_run(run_dir)


def run_with_baseline(spec: RunSpec, args: argparse.Namespace, start: Starter) -> int:
    """Baseline at REF, then the candidate as is, one after the other; then compare them."""
    from console.plan import build_plan

    ref = str(args.baseline)
    if getattr(args, "detach", False):
        raise SpecError("--baseline runs two runs one after the other and compares them: it cannot --detach")
    if not spec.bridge_repo:
        raise SpecError("--baseline needs the Bridge checkout: --bridge-repo PATH (or BRIDGE_REPO)")
    bridge = str(Path(spec.bridge_repo).expanduser().resolve())
    commit = resolve_ref(bridge, ref)
    cand_plan = build_plan(spec)  # bad input fails here, before anything is created
    runs_dir = Path(spec.runs_dir).expanduser().resolve()
    worktree = add_worktree(bridge, commit, runs_dir)
    current: Path | None = None
    try:
        for note in fill_submodules(bridge, worktree, commit):
            print(f"baseline: {note}", file=sys.stderr)
        base_spec = copy.deepcopy(spec)
        base_spec.bridge_repo = str(worktree)
        base_spec.extra["bridge_state"] = {
            "path": bridge,
            "worktree": str(worktree),
            "ref": ref,
            "commit": commit,
            "dirty": [],
        }
        base_spec.extra["baseline_role"] = "baseline"
        base_plan = build_plan(base_spec)
        cand_spec = copy.deepcopy(spec)
        cand_spec.extra["bridge_state"] = bridge_state(bridge)
        cand_spec.extra["baseline_role"] = "candidate"

        current = base_dir = start(base_spec, args, base_plan)
        update_state(base_dir, lambda s: s.update({"baseline_of_ref": ref}))
        _follow(base_dir, f"baseline (Bridge at {ref} = {commit[:12]})")
        cand_spec.extra["baseline_run"] = base_dir.name
        current = cand_dir = start(cand_spec, args, cand_plan)
        update_state(cand_dir, lambda s: s.update({"baseline_run": base_dir.name}))
        update_state(base_dir, lambda s: s.update({"candidate_run": cand_dir.name}))
        _follow(cand_dir, "candidate (Bridge as is)")
        current = None
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)
        if current is not None:  # a run we started must not outlive the worktree it reads
            from console.runs.cancel import cancel_run

            cancel_run(current, grace=5.0)
            if interrupted:
                print(f"\ncancelled {current.name}; the baseline worktree is removed", file=sys.stderr)
        if interrupted:
            return exitcodes.CANCELLED
        raise
    finally:
        remove_worktree(bridge, worktree)
    return finish_pair(base_dir, cand_dir)


def finish_pair(base_dir: Path, cand_dir: Path) -> int:
    """Compare the pair, keep ``compare.json`` (with its report lines) in the candidate, rewrite its report."""
    result = compare_runs(base_dir, cand_dir)
    result["report_lines"] = report_lines(result)
    write_json_atomic(cand_dir / COMPARE_JSON, result)
    try:
        from console.report import write_report

        write_report(cand_dir)
    except Exception as exc:  # noqa: BLE001 - the comparison stands without the report
        print(f"report of {cand_dir.name} not written: {exc}", file=sys.stderr)
    print("\n--- Baseline comparison ---")
    print(text(result), end="")
    verdict = read_state(cand_dir).get("verdict")  # the candidate's own exit code unless it passed
    return exitcodes.for_verdict(verdict) if verdict != "Pass" else VERDICT_EXIT[result["verdict"]]
