"""The redacting filter between a Slurm step and its log: ``python -m console.runs.slurm.logfilter``.

The batch script pipes each step's output (srun's stdout, the task's stdout+stderr) through this
filter into ``logs/NN-<step>.log``, on the batch host (outside any container). No secret value is ever
written into a file for it: the filter learns them from its own environment at run time, the one
sbatch gives the job (secret-named variables such as ``HF_TOKEN``, and the ``RL_CONSOLE_SECRET_ARG_N``
variables that carry secret argv values), and masks them plus the token shapes and ``NAME=value``
assignments ``console.redact`` knows, as ``console.runs.stepwrap`` does for local runs.

Reads stdin until EOF and writes stdout; lines go out as they arrive (a partial line after a pause).
SIGINT/SIGTERM/SIGHUP do not stop it (``scancel`` signals the whole job): it ends when the step's
output ends, so the last lines reach the log.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping

from console.redact import is_secret_name
from console.runs.stepwrap import RedactingWriter, read_ready

SECRET_ARG_PREFIX = "RL_CONSOLE_SECRET_ARG_"


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """The secret values in ``env``: ``RL_CONSOLE_SECRET_ARG_N`` and secret-named variables."""
    return [
        v
        for k, v in env.items()
        if v and v != "***" and (k.startswith(SECRET_ARG_PREFIX) or is_secret_name(k))
    ]


def pump(rfd: int, writer: RedactingWriter) -> None:
    """Copy the pipe to the writer until its end; a pause flushes a partial line."""
    while (data := read_ready(rfd)) != b"":
        if data is None:
            writer.idle()
        else:
            writer.feed(data)
    writer.close()


def main() -> int:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    writer = RedactingWriter(sys.stdout.fileno(), env_secrets(os.environ))
    pump(sys.stdin.fileno(), writer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
