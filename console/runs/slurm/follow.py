"""``python -m console.runs.slurm.follow RUN_DIR [--poll S]``: the detached follower of a Slurm run.

Started by ``start_run`` (and again on reattach when none runs); it survives the console, keeps
``state.json``/``events.jsonl`` current and exits when the job ends. Exit status: the verdict's
(0 Pass, 1 Fail, 3 Blocked, 130 Cancelled), 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from console.errors import ConsoleError
from console.exitcodes import USAGE, for_verdict
from console.runs.slurm.backend import follow


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m console.runs.slurm.follow")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--poll", type=float, default=2.0, help="seconds between squeue polls")
    args = p.parse_args(argv)
    if not (args.run_dir / "state.json").is_file():
        print(f"rl-console follow: {args.run_dir}: not a run folder (no state.json)", file=sys.stderr)
        return USAGE
    try:
        state = follow(args.run_dir, poll_s=args.poll)
    except ConsoleError as exc:
        print(f"rl-console follow: {exc}", file=sys.stderr)
        return exc.exit_code
    except FileNotFoundError as exc:
        print(f"rl-console follow: the run folder went away ({exc.filename})", file=sys.stderr)
        return USAGE
    print(f"rl-console follow: {state.get('id')}: {state.get('status')} ({state.get('verdict')})", flush=True)
    return for_verdict(state.get("verdict"))


if __name__ == "__main__":
    sys.exit(main())
