"""Run one step and write its exit code next to its log, whoever is (or is not) watching.

``python -m console.runs.stepwrap EXIT_FILE -- ARGV...``: stdin/stdout/stderr are inherited. The
wrapper survives SIGINT/SIGTERM sent to its process group (the step gets them too) to record how the
step ended: its exit status, or ``128 + signal`` (shell convention).

The step's output passes through the wrapper to the log with every known secret (secret-named
variables of its environment, secret argv values) and token-shaped value masked (``console.redact``),
written as it arrives but for a tail that could start a secret. A full disk does not stop the draining.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from console.fileio import write_text_atomic
from console.redact import redact_text, secret_argv_positions, secret_values

CHUNK = 65536
FLUSH_AFTER_S = 0.2  # a partial line is written after this long without more output
DRAIN_AFTER_EXIT_S = 3.0  # output still arriving from the step's descendants after it exited


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


class RedactingWriter:
    """Bytes in, redacted bytes out to ``fd``; lines are redacted whole, a partial line after a pause."""

    def __init__(self, fd: int, secrets: list[str]) -> None:
        self.fd = fd
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self.buf = b""
        self.last_data = time.monotonic()
        self.write_failed: OSError | None = None

    def _emit(self, data: bytes) -> None:
        if not data or self.write_failed is not None:
            return
        text = redact_text(data.decode("utf-8", errors="surrogateescape"), self.secrets)
        out = text.encode("utf-8", errors="surrogateescape")
        try:
            while out:
                n = os.write(self.fd, out)
                out = out[n:]
        except OSError as exc:  # a full disk: keep draining the step, write nothing more
            self.write_failed = exc

    def _safe_tail(self, data: bytes) -> int:
        """Length of the longest tail of ``data`` that is a proper prefix of a secret."""
        keep = 0
        for secret in self.secrets:
            sb = secret.encode("utf-8", errors="surrogateescape")
            for n in range(min(len(sb) - 1, len(data)), keep, -1):
                if data.endswith(sb[:n]):
                    keep = n
                    break
        return keep

    def feed(self, data: bytes) -> None:
        self.last_data = time.monotonic()
        self.buf += data
        cut = max(self.buf.rfind(b"\n"), self.buf.rfind(b"\r"))
        if cut >= 0:
            self._emit(self.buf[: cut + 1])
            self.buf = self.buf[cut + 1 :]
        if len(self.buf) > CHUNK:  # a giant line: write it in pieces, keeping a possible secret start
            self._emit_safe()

    def idle(self) -> None:
        if self.buf and time.monotonic() - self.last_data >= FLUSH_AFTER_S:
            self._emit_safe()

    def _emit_safe(self) -> None:
        """Write the pending bytes but a tail that could be the start of a secret."""
        cut = len(self.buf) - self._safe_tail(self.buf)
        self._emit(self.buf[:cut])
        self.buf = self.buf[cut:]

    def close(self) -> None:
        self._emit(self.buf)
        self.buf = b""


def step_secrets(cmd: list[str], env: dict[str, str] | os._Environ[str]) -> list[str]:
    """What must never reach the log: secret env values and secret argv values of the step."""
    values = secret_values(dict(env))
    values += [value for _prefix, value in secret_argv_positions(cmd).values()]
    return values


def read_ready(rfd: int, timeout: float = 0.1) -> bytes | None:
    """What the pipe holds within ``timeout``: None when nothing came (or a signal interrupted the
    wait), ``b""`` at its end (or on a read error), else the bytes read."""
    try:
        ready, _, _ = select.select([rfd], [], [], timeout)
        if not ready:
            return None
        return os.read(rfd, CHUNK)
    except InterruptedError:
        return None
    except OSError:
        return b""


def _pump(child: subprocess.Popen[bytes], rfd: int, writer: RedactingWriter) -> int:
    """Copy the step's output until it exits (and its output is drained); return its exit status."""
    code: int | None = None
    exited_at = 0.0
    while True:
        if code is None:
            rc = child.poll()
            if rc is not None:
                code = exit_status(rc)
                exited_at = time.monotonic()
        elif time.monotonic() - exited_at > DRAIN_AFTER_EXIT_S:
            break  # descendants keep the pipe open: stop following them
        data = read_ready(rfd)
        if data is None:
            writer.idle()
        elif not data:
            break
        else:
            writer.feed(data)
    if code is None:
        code = exit_status(child.wait())  # a signal does not interrupt it (PEP 475: retried)
    writer.close()
    return code


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m console.runs.stepwrap EXIT_FILE -- ARGV...", file=sys.stderr)
        return 2
    exit_file, cmd = Path(args[0]), args[2:]
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _noop)
    rfd, wfd = os.pipe()
    try:
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=wfd, stderr=wfd)
    except OSError as exc:
        os.close(rfd)
        os.close(wfd)
        print(f"rl-console: cannot start {cmd[0]!r}: {exc}", file=sys.stderr, flush=True)
        code = 127
    else:
        os.close(wfd)
        writer = RedactingWriter(sys.stdout.fileno(), step_secrets(cmd, os.environ))
        code = _pump(child, rfd, writer)
        os.close(rfd)
        if writer.write_failed is not None and writer.write_failed.errno == errno.ENOSPC:
            mark_no_space(exit_file)
    try:
        write_exit(exit_file, code)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        mark_no_space(exit_file)  # the supervisor reads our exit status instead
    return code


def mark_no_space(exit_file: Path) -> None:
    """``NN-<step>.nospace``: the step's log or exit file could not be written (disk full)."""
    with contextlib.suppress(OSError):
        exit_file.with_suffix(".nospace").touch()


if __name__ == "__main__":
    sys.exit(main())
