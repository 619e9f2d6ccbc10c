"""Commands and fixes as text, the one way for every view and script: a shell line (``env -u NAME
KEY=VALUE ARGV...``, every word quoted), a plan step's command for people (secrets masked), a
remedy in one line. Light on purpose: triage, report, the Slurm script and the views import it."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from console.redact import redact_argv, redact_env, redact_text
from console.rundir.paths import fill_run_dir


def shell_line(
    argv: Iterable[str],
    env: Mapping[str, str] | None = None,
    unset: Iterable[str] = (),
    *,
    word: Callable[[str], str] = shlex.quote,
) -> str:
    """``[env -u NAME... KEY=VALUE...] ARGV...`` with every name, value and argument through ``word``
    (``shlex.quote``, or a script's own quoting); no ``env`` word when nothing is set or unset."""
    words = [w for name in unset for w in ("-u", word(str(name)))]
    words += [f"{k}={word(str(v))}" if v else f"{k}=" for k, v in (env or {}).items()]
    return " ".join((["env", *words] if words else []) + [word(str(a)) for a in argv])


def command_line(step: Mapping[str, Any] | list[str], run_dir: str | Path | None = None) -> str:
    """A plan step's command (or a bare argv) as one shell line for people (plan text, TUI preview,
    report, doctor): secrets masked, every word shlex-quoted, ``{run_dir}`` filled in when given."""
    step = {"argv": step} if isinstance(step, list) else step
    argv = [str(a) for a in step.get("argv") or []]
    env = {str(k): str(v) for k, v in (step.get("env") or {}).items()}
    if run_dir is not None:
        argv, env = fill_run_dir(argv, run_dir), fill_run_dir(env, run_dir)
    return redact_text(shell_line(redact_argv(argv), redact_env(env), step.get("unset") or []))


def remedy_text(remedy: Mapping[str, Any] | None) -> str:
    """A remedy (triage or doctor: ``unset``, ``env``, ``overrides``, ``commands``) in one line:
    ``unset NAME, KEY=VALUE, override, command``; secrets masked; "" when it changes nothing."""
    remedy = remedy or {}
    env = redact_env({str(k): str(v) for k, v in (remedy.get("env") or {}).items()})
    parts = [f"unset {u}" for u in remedy.get("unset") or []]
    parts += [f"{k}={shlex.quote(v)}" for k, v in env.items()]
    parts += [str(o) for o in remedy.get("overrides") or []]
    parts += [shlex.join(redact_argv([str(w) for w in c])) for c in remedy.get("commands") or []]
    return redact_text(", ".join(parts))
