"""Run one step and write its exit code next to its log, whoever is (or is not) watching.

``python -m console.runs.stepwrap EXIT_FILE -- ARGV...``: stdin/stdout/stderr are inherited (the
supervisor points them at ``/dev/null`` and the step's log). The wrapper survives SIGINT/SIGTERM sent
to its process group (the step gets them too) so it can record how the step ended; the code is the
step's exit status, or ``128 + signal`` when a signal ended it (shell convention).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from console.fileio import write_text_atomic


def exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def write_exit(path: Path, code: int) -> None:
    write_text_atomic(path, f"{code}\n")


def read_exit(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def _noop(_signum: int, _frame: object) -> None:
    """A handler (not SIG_IGN) so the step, after exec, gets default signal handling."""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m console.runs.stepwrap EXIT_FILE -- ARGV...", file=sys.stderr)
        return 2
    exit_file, cmd = Path(args[0]), args[2:]
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _noop)
    try:
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"rl-console: cannot start {cmd[0]!r}: {exc}", file=sys.stderr, flush=True)
        code = 127
    else:
        while True:
            try:
                code = exit_status(child.wait())
                break
            except InterruptedError:
                continue
    write_exit(exit_file, code)
    return code


if __name__ == "__main__":
    sys.exit(main())
