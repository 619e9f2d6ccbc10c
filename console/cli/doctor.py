"""`rl-console doctor SPEC... [--json]`: exit 0 for ok/warn, 3 for block, 2 for a bad spec."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import shutil
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

from console import exitcodes
from console.commandtext import remedy_text
from console.doctor.model import DoctorResult
from console.doctor.registry import run_doctor
from console.spec import spec_from_args

_MARK = {"ok": "ok", "warn": "WARN", "block": "BLOCK"}


def format_table(result: DoctorResult, width: int | None = None) -> str:
    width = width or max(60, min(shutil.get_terminal_size((100, 20)).columns, 140))
    id_w = max(len(c["id"]) for c in result["checks"]) if result["checks"] else 10
    lines = [f"{'CHECK':<{id_w}}  {'STATUS':<6}  EVIDENCE"]
    indent = " " * (id_w + 10)
    wrap = functools.partial(textwrap.wrap, width=max(20, width - len(indent)), break_on_hyphens=False)
    for check in result["checks"]:
        body = wrap(check["evidence"] or "-") or ["-"]
        lines.append(f"{check['id']:<{id_w}}  {_MARK[check['status']]:<6}  {body[0]}")
        lines.extend(indent + more for more in body[1:])
        if check["status"] != "ok":
            lines += [indent + text for text in wrap("advice: " + check["advice"])]
            remedy = remedy_text(check["remedy"])
            if remedy:
                lines.append(indent + "remedy: " + remedy)
    lines.append(f"verdict: {result['verdict']}")
    return "\n".join(lines)


@contextlib.contextmanager
def progress_line(what: str) -> Iterator[None]:
    """Say on stderr that checks are running (a ticking line on a terminal), then how long they took."""
    tty = sys.stderr.isatty()
    stop = threading.Event()
    start = time.monotonic()

    def tick() -> None:
        while not stop.wait(0.5):
            sys.stderr.write(f"\r{what}... {time.monotonic() - start:.0f}s")
            sys.stderr.flush()

    sys.stderr.write(f"{what}..." + ("" if tty else "\n"))
    sys.stderr.flush()
    ticker = threading.Thread(target=tick, daemon=True) if tty else None
    if ticker is not None:
        ticker.start()
    try:
        yield
    finally:
        stop.set()
        if ticker is not None:
            ticker.join()
        done = f"{what}: done in {time.monotonic() - start:.1f}s"
        sys.stderr.write(("\r\x1b[K" + done if tty else done) + "\n")
        sys.stderr.flush()


def cmd_doctor(args: argparse.Namespace) -> int:
    from console.plan import build_plan

    spec = spec_from_args(args)
    plan = build_plan(spec)  # a bad spec: its SpecError, exit 2
    with progress_line("doctor: running preflight checks"):
        result = run_doctor(spec, plan)
    if getattr(args, "json", False):
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_table(result))
    return exitcodes.BLOCKED if result["verdict"] == "block" else exitcodes.PASS
