"""The run store: a folder of run folders, newest first. The one way the CLI and the TUI list runs,
resolve a run reference and read a run's state (a run whose supervisor is lost is settled first)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from console.errors import RunNotFound
from console.rundir.ids import looks_like_run_dir
from console.rundir.model import State
from console.runs.recover import current_state
from console.spec import default_runs_dir


def runs_dir_from(arg: str | None) -> Path:
    """``--runs-dir`` (or ``$RL_CONSOLE_RUNS``, or ``runs``), ``~`` expanded."""
    return Path(arg or default_runs_dir()).expanduser()


def progress_of(state: State) -> str:
    """``done/total`` steps, e.g. ``2/3``."""
    steps = state.get("steps") or []
    done = sum(1 for s in steps if s.get("status") in ("passed", "failed", "skipped", "cancelled"))
    return f"{done}/{len(steps)}"


class RunStore:
    def __init__(self, runs_dir: str | Path) -> None:
        self.runs_dir = Path(runs_dir)

    def run_dirs(self) -> list[Path]:
        """Run folders (a ``state.json`` inside, not hidden), newest id first."""
        try:
            entries = list(self.runs_dir.iterdir())
        except OSError:
            return []
        runs = (p for p in entries if not p.name.startswith(".") and looks_like_run_dir(p))
        return sorted(runs, key=lambda p: p.name, reverse=True)

    def states(self) -> Iterator[tuple[Path, State]]:
        """(run folder, current state) per run, newest id first; a folder whose state.json cannot
        be read (half written, not JSON) is skipped."""
        for path in self.run_dirs():
            try:
                state = current_state(path)
            except (OSError, ValueError):
                continue
            if isinstance(state, dict):
                yield path, state

    def list(self) -> list[dict[str, Any]]:
        """One summary per run, newest first: id, status, verdict, progress, current step, times."""
        rows = []
        for path, state in self.states():
            steps = state.get("steps") or []
            current = state.get("current_step") or 0
            rows.append(
                {
                    "id": path.name,
                    "path": str(path),
                    "status": state.get("status"),
                    "verdict": state.get("verdict"),
                    "progress": progress_of(state),
                    "step": steps[current]["name"] if 0 <= current < len(steps) else None,
                    "created": state.get("created"),
                    "started": state.get("started"),
                    "ended": state.get("ended"),
                    "linked_from": state.get("linked_from"),
                    "error": state.get("error"),
                }
            )
        return rows

    def resolve(self, run: str) -> Path:
        """A run folder from an id, a unique id prefix, a path, or ``last``."""
        as_path = Path(run).expanduser()
        if looks_like_run_dir(as_path):
            return as_path.resolve()
        dirs = self.run_dirs()
        if run in ("last", "latest") and dirs:
            return dirs[0].resolve()
        exact = [p for p in dirs if p.name == run]
        if exact:
            return exact[0].resolve()
        matches = [p for p in dirs if p.name.startswith(run)]
        if len(matches) == 1:
            return matches[0].resolve()
        if len(matches) > 1:
            names = ", ".join(p.name for p in matches[:3])
            raise RunNotFound(f"run {run!r} is ambiguous in {self.runs_dir} ({names}...)")
        raise RunNotFound(f"no run {run!r} in {self.runs_dir}")

    def load(self, run: str) -> dict[str, Any]:
        """Everything a view needs: id, path, state, spec, plan, triage (when present)."""
        path = self.resolve(run)
        out: dict[str, Any] = {"id": path.name, "path": str(path), "state": current_state(path)}
        for key in ("spec", "plan", "triage"):
            try:
                out[key] = json.loads((path / f"{key}.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                out[key] = None
        return out
