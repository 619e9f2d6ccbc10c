"""Entry points: ``rl-console`` (no subcommand), ``rl-console tui ...``, and ``open_run`` for the demo."""

from __future__ import annotations

import argparse
from pathlib import Path

from console.errors import SpecError
from console.runs.store import RunStore, runs_dir_from


def _run_app(
    runs_dir: Path, *, run_dir: Path | None = None, log: Path | None = None, theme: str | None = None
) -> int:
    from console.tui.app import ConsoleApp

    app = ConsoleApp(runs_dir, open_run=run_dir, open_log=log, theme=theme)
    app.run()
    return int(app.return_code or 0)


def cmd_tui(args: argparse.Namespace) -> int:
    """``rl-console [tui] [--runs-dir D] [--open RUN] [--log FILE]``: the console. Quitting never stops runs."""
    runs_dir = runs_dir_from(getattr(args, "runs_dir", None)).resolve()
    run_dir = RunStore(runs_dir).resolve(args.open_run) if getattr(args, "open_run", None) else None
    log = Path(args.log).expanduser() if getattr(args, "log", None) else None
    if log is not None and not log.is_file():
        raise SpecError(f"--log {args.log}: no such file")
    return _run_app(runs_dir, run_dir=run_dir, log=log, theme=getattr(args, "theme", None))


def open_run(run_dir: Path, runs_dir: Path) -> int:
    """Open the console directly on ``run_dir``'s Monitor screen (used by ``rl-console demo``)."""
    return _run_app(Path(runs_dir).expanduser().resolve(), run_dir=Path(run_dir).resolve())
