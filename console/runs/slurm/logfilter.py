"""The redacting filter between a Slurm step and its log: ``python -m console.runs.slurm.logfilter``.

The batch script pipes each step's output through it into ``logs/NN-<step>.log``, on the batch host.
It learns the secrets from its own environment (sbatch's: secret-named variables and the
``RL_CONSOLE_SECRET_ARG_N`` values of secret argv words), never from a file, and masks them as
``console.runs.stepwrap`` does for local runs. SIGINT/SIGTERM/SIGHUP do not stop it (``scancel``
signals the whole job): it ends with the step's output, so the last lines reach the log.
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
