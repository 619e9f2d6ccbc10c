"""``rl-console report``: the summary report of a run."""

from __future__ import annotations

import argparse
import json
import sys

from console.report import render_json, render_markdown, write_report
from console.runs.recover import current_state
from console.runs.store import RunStore, runs_dir_from


def cmd_report(args: argparse.Namespace) -> int:
    """``rl-console report RUN [--format md|json] [--recompute]``."""
    run_dir = RunStore(runs_dir_from(args.runs_dir)).resolve(args.run)
    current_state(run_dir)  # a run whose supervisor is lost is settled before it is reported
    data = render_json(run_dir, recompute=bool(getattr(args, "recompute", False)))
    if args.format == "json":
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(render_markdown(run_dir, data))
    try:
        write_report(run_dir, data)
    except OSError as exc:
        print(f"rl-console report: warning: could not write report files: {exc}", file=sys.stderr)
    return 0
