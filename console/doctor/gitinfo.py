"""Read a checkout's state with git (argv lists, timeouts, no shell)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class RepoState:
    path: str
    head: str | None  # short HEAD, None when not a git checkout
    dirty: list[str]  # `git status --short` lines
    error: str | None = None

    def describe(self) -> str:
        if self.head is None:
            return f"{self.path}: {self.error or 'not a git checkout'}"
        dirty = f"{len(self.dirty)} dirty: " + ", ".join(self.dirty[:8]) if self.dirty else "clean"
        if len(self.dirty) > 8:
            dirty += f", ... (+{len(self.dirty) - 8})"
        return f"{self.path} @ {self.head} ({dirty})"


def git(path: str | Path, *args: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    """``git -C path args...``, output as text, no stdin (never raises on a non-zero exit)."""
    return subprocess.run(
        ["git", "-C", str(path), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def repo_state(path: Path) -> RepoState:
    if not path.is_dir():
        return RepoState(str(path), None, [], "no such directory")
    try:
        head = git(path, "rev-parse", "--short", "HEAD")
        if head.returncode != 0:
            msg = (head.stderr.strip().splitlines() or ["not a git checkout"])[-1]
            return RepoState(str(path), None, [], msg)
        status = git(path, "status", "--short")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return RepoState(str(path), None, [], f"git failed: {exc}")
    dirty = [line for line in status.stdout.splitlines() if line.strip()]
    return RepoState(str(path), head.stdout.strip(), dirty)


def full_head(path: Path) -> str | None:
    try:
        out = git(path, "rev-parse", "HEAD")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None
