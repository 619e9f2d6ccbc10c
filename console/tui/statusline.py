"""``rl-console status [--tmux]``: one short line about the runs, for a shell or tmux ``status-right``.

    set -g status-right '#(rl-console status --tmux) %H:%M'
    set -g status-interval 5

Live runs first (the newest one with its step/iteration), else the newest run's verdict. Headless.
"""

from __future__ import annotations

import argparse

from console.runs.store import runs_dir_from
from console.tui.rundata import RunRow, list_runs

MARKS = {
    "Pass": ("ok", "green"),
    "Fail": ("FAIL", "red"),
    "Blocked": ("BLOCKED", "yellow"),
    "Cancelled": ("cancelled", "colour244"),
    "Incomplete": ("incomplete", "yellow"),
}


def short_id(run_id: str) -> str:
    """``20261123-115133-demo-l0-nan`` -> ``demo-l0-nan`` (the timestamp is in ``ls``)."""
    parts = run_id.split("-", 2)
    return parts[2] if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit() else run_id


def segment(rows: list[RunRow], tmux: bool = False) -> str:
    def colour(text: str, name: str) -> str:
        return f"#[fg={name}]{text}#[default]" if tmux else text

    if not rows:
        return "rl: no runs"
    live = [r for r in rows if r.live]
    if live:
        newest = live[0]
        more = f" +{len(live) - 1}" if len(live) > 1 else ""
        progress = newest.progress_text()
        return colour(f"rl ▶ {short_id(newest.id)} {progress}{more}", "cyan")
    last = rows[0]
    word, name = MARKS.get(str(last.verdict), (str(last.verdict or last.status), "default"))
    return "rl " + colour(f"{word} {short_id(last.id)}", name)


def cmd_status(args: argparse.Namespace) -> int:
    rows = list_runs(runs_dir_from(getattr(args, "runs_dir", None)).resolve())
    print(segment(rows, tmux=bool(getattr(args, "tmux", False))))
    return 0
