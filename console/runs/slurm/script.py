"""The sbatch submission of a plan, in one of two modes.

- ``srun`` mode: a batch script whose steps each run through ``srun`` (with ``--container-image``,
  ``--container-mounts`` and ``--container-workdir`` when ``--container`` is given).
- ``ray.sub`` mode: NeMo-RL's own launcher (``sbatch ... ray.sub`` with ``COMMAND``, ``CONTAINER``,
  ``MOUNTS``); ``COMMAND`` runs a generated driver script inside the Ray head's container.

Either way each step writes ``logs/NN-<step>.log`` and ``.exit`` in the run folder, as local runs do.
Every value is ``shlex.quote``d; the known roots (run folder, checkouts, ``HF_HOME``) are set once at
the top and referred to as ``${VAR}``, so the script stays generic.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import console
from console.commandtext import shell_line
from console.errors import SpecError
from console.redact import MASK, is_secret_name, redact_env, secret_argv_positions
from console.rundir.paths import fill_run_dir
from console.rundir.state import step_log_name
from console.spec import RunSpec

MODES = ("srun", "ray.sub")
_NAME_RE = re.compile(r"[^a-z0-9-]+")


@dataclass
class Submission:
    """Everything needed to submit (and to show before submitting)."""

    mode: str
    script_name: str  # file under <run_dir>/slurm/: job.sbatch (srun) or driver.sh (ray.sub)
    script_text: str
    sbatch_args: list[str]  # after "sbatch --parsable"
    env: dict[str, str] = field(default_factory=dict)  # extra environment for sbatch (ray.sub mode)
    cwd: str | None = None
    secret_env: dict[str, str] = field(default_factory=dict, repr=False)  # never written anywhere
    warnings: list[str] = field(default_factory=list)

    def command_text(self) -> str:
        """The submission as one shell line (secrets masked), for display and ``slurm/submit.sh``."""
        prefix = f"cd {shlex.quote(self.cwd)} && " if self.cwd else ""
        return prefix + shell_line(["sbatch", "--parsable", *self.sbatch_args], redact_env(self.env))

    def preview(self) -> str:
        lines = [f"# rl-console Slurm submission ({self.mode} mode)"]
        lines += [f"# warning: {w}" for w in self.warnings]
        lines += [self.command_text(), "", f"# --- slurm/{self.script_name} ---", self.script_text]
        return "\n".join(lines)


# The interpreter the batch script runs the redacting log filter with (None: this console's own,
# ``sys.executable``); it must be visible on the batch host, like the run folder.
FILTER_PYTHON: str | None = None
SRUN_LOG_SUFFIX = ".srun.log"  # srun's own messages for a step: logs/NN-<step>.srun.log


def plan_dict(plan: Any) -> dict[str, Any]:
    """Accept a ``console.plan.Plan`` (``to_dict()``) or its dict form."""
    if hasattr(plan, "to_dict"):
        d: dict[str, Any] = plan.to_dict()
        return d
    if isinstance(plan, dict):
        return plan
    raise SpecError(f"not a plan: {type(plan).__name__}")


def step_file_stem(index: int, name: str) -> str:
    """``NN-<step>`` (1-based NN): the stem of ``logs/NN-<step>.log`` and ``.exit``, as for local runs."""
    return step_log_name(index - 1, name)[len("logs/") : -len(".log")]


def ray_sub_path(spec: RunSpec) -> Path | None:
    if spec.framework != "nemo-rl" or not spec.repo:
        return None
    p = Path(spec.repo) / "ray.sub"
    return p if p.is_file() else None


def choose_mode(spec: RunSpec) -> str:
    """``ray.sub`` when asked (``spec.extra["slurm_mode"]``), or for a multi-node NeMo-RL run whose
    checkout has ``ray.sub`` and a container is given; ``srun`` otherwise."""
    asked = spec.extra.get("slurm_mode")
    if asked is not None and asked not in MODES:
        raise SpecError(f"slurm mode {asked!r}: expected one of {', '.join(MODES)}")
    if asked == "ray.sub":
        if ray_sub_path(spec) is None:
            raise SpecError("ray.sub mode needs --framework nemo-rl and a --repo checkout that has ray.sub")
        if not spec.slurm.container:
            raise SpecError("ray.sub mode needs --container IMAGE (ray.sub requires CONTAINER)")
        return "ray.sub"
    if asked == "srun":
        return "srun"
    if spec.slurm.nodes > 1 and ray_sub_path(spec) is not None and spec.slurm.container:
        return "ray.sub"
    return "srun"


# ---- generic paths ---------------------------------------------------------------------------
def path_roots(spec: RunSpec, run_dir: Path) -> dict[str, str]:
    """Variables written once at the top of the script, longest value first."""
    repo = "VERL_REPO" if spec.framework == "verl" else "NEMO_RL_REPO"
    roots = {
        "RUN_DIR": run_dir,
        "BRIDGE_REPO": spec.bridge_repo,
        repo: spec.repo,
        "HF_HOME": spec.env.get("HF_HOME"),
    }
    paths = {k: str(v) for k, v in roots.items() if v}
    usable = {k: v.rstrip("/") for k, v in paths.items() if v.startswith("/") and len(v.rstrip("/")) > 1}
    return dict(sorted(usable.items(), key=lambda kv: -len(kv[1])))


def _path_char(ch: str, allowed: str = "") -> bool:
    """Would ``ch`` continue a path name (so a root next to it is part of a longer path)?"""
    return ch not in allowed and (ch.isalnum() or ch in "/_.-~")


def generic_word(text: str, roots: dict[str, str]) -> str:
    """One shell word for ``text``: root paths become ``"${VAR}"``, the rest is ``shlex.quote``d."""
    if not text:
        return "''"
    parts: list[str] = []
    i = 0
    lit_start = 0
    while i < len(text):
        for var, value in roots.items():
            end = i + len(value)
            if (
                text.startswith(value, i)
                and (end == len(text) or not _path_char(text[end], "/"))
                and (i == 0 or not _path_char(text[i - 1]))
            ):
                if lit_start < i:
                    parts.append(shlex.quote(text[lit_start:i]))
                parts.append(f'"${{{var}}}"')
                i = end
                lit_start = i
                break
        else:
            i += 1
    if lit_start < len(text):
        parts.append(shlex.quote(text[lit_start:]))
    return "".join(parts)


# ---- pieces of the script --------------------------------------------------------------------
def container_mounts(spec: RunSpec, run_dir: Path) -> list[str]:
    """``--mounts`` as given, plus the run folder (steps write their logs there) when not covered."""
    defaults = (spec.repo, spec.bridge_repo, spec.env.get("HF_HOME"))
    mounts = list(spec.slurm.mounts) or list(dict.fromkeys(f"{p}:{p}" for p in defaults if p))
    sources = [m.split(":", 1)[0].rstrip("/") for m in mounts]
    if not any(src and (str(run_dir) == src or str(run_dir).startswith(src + "/")) for src in sources):
        mounts.append(f"{run_dir}:{run_dir}")
    for m in mounts:
        if not m or m.count(":") not in (1, 2) or not m.split(":", 1)[0]:
            raise SpecError(f"--mounts {m!r}: expected SRC:DST[:ro]")
    return mounts


def gpus_per_node(spec: RunSpec, steps: list[dict[str, Any]]) -> int:
    if spec.slurm.gpus_per_node is not None:
        return max(0, int(spec.slurm.gpus_per_node))
    wanted = max((int(s.get("gpus") or 0) for s in steps), default=0)
    nodes = max(1, spec.slurm.nodes)
    return -(-wanted // nodes)  # ceil


def _merge_stderr(launch_prefix: list[str]) -> list[str]:
    """With srun, the task's stderr joins its stdout inside the task (``sh -c 'exec "$@" 2>&1'``), so
    srun's stdout carries what the program printed, interleaved as in a local run, and srun's own
    stderr holds only srun's messages (task exit notes, launch failures): ``NN-<step>.srun.log``."""
    if launch_prefix[:1] != ["srun"]:
        return launch_prefix
    return [*launch_prefix, "sh", "-c", 'exec "$@" 2>&1', "sh"]


def _step_block(index: int, step: dict[str, Any], roots: dict[str, str], launch_prefix: list[str]) -> str:
    """One step: ``( cd CWD && exec env ... [srun ...] argv ) | redact >>log`` then its exit file (the
    step's own exit status, ``PIPESTATUS[0]``)."""
    stem = step_file_stem(index, step["name"])
    argv = [str(a) for a in step.get("argv") or []]
    if not argv:
        raise SpecError(f"step {step['name']!r} has an empty argv")
    env = {str(k): str(v) for k, v in (step.get("env") or {}).items()}
    for key in env:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise SpecError(f"step {step['name']!r}: bad environment name {key!r}")
    unset = [str(u) for u in step.get("unset") or []]
    srun = launch_prefix[:1] == ["srun"]
    launch_prefix = _merge_stderr(launch_prefix)
    line = shell_line([*launch_prefix, *argv], env, unset, word=lambda w: _word(w, roots))
    cwd = step.get("cwd") or None
    cd = f"cd {generic_word(str(cwd), roots)} && " if cwd else ""
    on_failure = step.get("on_failure") or "stop"
    log = f'"${{RUN_DIR}}/logs/{stem}.log"'
    run = f"( {cd}exec {line} )"
    if srun:  # srun's stderr (its own messages) to srun_messages, which sends slurmstepd's to the log
        run = (
            f"{{ trap : TERM INT; {run} 2>&1 >&3 3>&- | srun_messages {shlex.quote(stem)} 3>&-; "
            f'exit "${{PIPESTATUS[0]}}"; }} 3>&1'
        )
    else:  # the step's stderr joins its stdout, as in a local run
        run += " 2>&1"
    title = str(step.get("title") or step["name"]).replace("\n", " ")
    return "\n".join(
        [
            f"# step {index:02d}: {title}",
            f"step_start {index} {shlex.quote(stem)}",
            f": >>{log}",
            f"{run} </dev/null | redact >>{log}",
            f'step_end {index} "${{PIPESTATUS[0]}}" {shlex.quote(stem)} {shlex.quote(on_failure)}',
            "",
        ]
    )


_SECRET_ARG = "\0rl-console-secret\0"  # an argv word whose secret part comes from sbatch's environment


def _word(arg: str, roots: dict[str, str]) -> str:
    if arg.startswith(_SECRET_ARG):
        var, _, prefix = arg[len(_SECRET_ARG) :].partition("\0")
        return (shlex.quote(prefix) if prefix else "") + f'"${{{var}}}"'
    return generic_word(arg, roots)


# The fallback filter when the console's interpreter is not visible on the node: python3, standard
# library only; masks the values of the job's secret-named variables and RL_CONSOLE_SECRET_ARG_N and
# the common token shapes (not the NAME=value assignments console.redact also masks). Line by line.
_FALLBACK_FILTER = r"""import os, re, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
W = {"TOKEN", "KEY", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS",
     "APIKEY", "AUTH", "PAT", "BEARER"}
def secret(k):
    ws = [w for w in re.split(r"[_.-]+", k.upper()) if w]
    return k.startswith("RL_CONSOLE_SECRET_ARG_") or any(w in W for w in ws) or any(
        w.endswith(f) for w in ws for f in ("TOKEN", "APIKEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"))
V = sorted({v for k, v in os.environ.items() if len(v) >= 4 and v != "***" and secret(k)}, key=len, reverse=True)
T = re.compile(r"\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
               r"|sk-[A-Za-z0-9_-]{20,}|nvapi-[A-Za-z0-9_-]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b")
out = sys.stdout.buffer
for raw in iter(sys.stdin.buffer.readline, b""):
    line = raw.decode("utf-8", "surrogateescape")
    for v in V:
        line = line.replace(v, "***")
    out.write(T.sub("***", line).encode("utf-8", "surrogateescape"))
    out.flush()
"""

_RUNNER_HEAD = r"""set -u
STOP=0
FIRST_RC=0
trap 'STOP=1' TERM INT
mkdir -p "${RUN_DIR}/logs"
# Step output reaches its log through a redacting filter, here on the batch host: the console's own
# interpreter (console.runs.slurm.logfilter) when the node sees it, else a python3 fallback. The
# filter reads the secret values from the job's environment; none is written in this script.
if [ -x "$RLC_PY" ] && PYTHONPATH="$RLC_HOME${PYTHONPATH:+:$PYTHONPATH}" "$RLC_PY" -c 'import console.runs.slurm.logfilter' 2>/dev/null; then
  RLC_FILTER=console
elif command -v python3 >/dev/null 2>&1; then
  RLC_FILTER=python3
  RLC_FILTER_NOTE="[rl-console] warning: ${RLC_PY} cannot run console.runs.slurm.logfilter on $(hostname -s); step logs are redacted by the python3 fallback (known secret values and token shapes only)"
else
  RLC_FILTER=none
  RLC_FILTER_NOTE="[rl-console] WARNING: NO REDACTION: neither ${RLC_PY} (console.runs.slurm.logfilter) nor python3 runs on $(hostname -s); step logs are written as printed, secrets included"
fi
redact() {
  case "$RLC_FILTER" in
    console) PYTHONPATH="$RLC_HOME${PYTHONPATH:+:$PYTHONPATH}" exec "$RLC_PY" -m console.runs.slurm.logfilter ;;
    python3) exec python3 -c "$RLC_FILTER_PY" ;;
    *) exec cat ;;
  esac
}
# srun_messages STEM: srun's stderr (the task's joins its stdout) to NN-<step>.srun.log, except
# slurmstepd's own notes (*** STEP ... CANCELLED ... DUE TO TIME LIMIT ***), which go to the step log
# (as srun's --output file would hold them)
srun_messages() {
  trap : TERM INT HUP
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
      slurmstepd*) printf '%s\n' "$line" ;;
      *) printf '%s\n' "$line" >>"${RUN_DIR}/logs/$1.srun.log" ;;
    esac
  done
}
# step_start INDEX STEM
step_start() {
  printf '[rl-console] step %s started %s on %s\n' "$1" "$(date +%s)" "$(hostname -s)"
  if [ "$RLC_FILTER" != console ]; then
    printf '%s\n' "$RLC_FILTER_NOTE"
    printf '%s\n' "$RLC_FILTER_NOTE" >>"${RUN_DIR}/logs/$2.srun.log"
  fi
}
# step_end INDEX RC STEM ON_FAILURE: write the exit file, stop on a failure when asked
step_end() {
  printf '%s\n' "$2" >"${RUN_DIR}/logs/.$3.exit.tmp" && mv -f "${RUN_DIR}/logs/.$3.exit.tmp" "${RUN_DIR}/logs/$3.exit"
  printf '[rl-console] step %s exited %s\n' "$1" "$2"
  if [ "$STOP" = 1 ]; then exit 143; fi
  if [ "$2" != 0 ]; then
    if [ "$FIRST_RC" = 0 ]; then FIRST_RC=$2; fi
    if [ "$4" = stop ]; then exit "$2"; fi
  fi
}
"""


def _runner(
    plan: dict[str, Any],
    spec: RunSpec,
    run_dir: Path,
    launch_prefix: list[str],
    header: list[str],
    workdir_flag: bool = False,
) -> str:
    """The step runner script. With ``workdir_flag`` (srun into a container) each step's cwd becomes
    its ``--container-workdir`` instead of a ``cd``."""
    roots = path_roots(spec, run_dir)
    steps = plan.get("steps") or []
    if not steps:
        raise SpecError("the plan has no steps to submit")
    lines = [
        "#!/bin/bash",
        *header,
        "# Generated by rl-console. Paths are set once here; steps refer to them.",
        *(f"export {var}={shlex.quote(value)}" for var, value in sorted(roots.items())),
        "# The console's interpreter and package root at submission (the redacting log filter).",
        f"RLC_PY={shlex.quote(FILTER_PYTHON or sys.executable)}",
        f"RLC_HOME={shlex.quote(str(Path(console.__file__).resolve().parent.parent))}",
        f"RLC_FILTER_PY={shlex.quote(_FALLBACK_FILTER)}",
        _RUNNER_HEAD,
    ]
    for i, step in enumerate(steps, start=1):
        prefix = list(launch_prefix)
        if workdir_flag and step.get("cwd"):
            prefix.append(f"--container-workdir={step['cwd']}")
            step = {**step, "cwd": None}
        lines.append(_step_block(i, step, roots, prefix))
    lines.append("printf '[rl-console] all steps done, first failure rc=%s\\n' \"$FIRST_RC\"")
    lines.append("exit 0")
    return "\n".join(lines) + "\n"


def split_secrets(plan: dict[str, Any], spec: RunSpec) -> tuple[dict[str, Any], dict[str, str]]:
    """Take secret env values out of the steps: they travel in sbatch's environment (Slurm passes the
    submitting environment to the job), never in the script. A masked value (``***``) is dropped, so
    the job inherits the variable from the submitting shell."""
    secrets = {k: v for k, v in spec.env.items() if is_secret_name(k) and v and v != MASK}
    steps = []
    n = 0
    for step in plan.get("steps") or []:
        argv = [str(a) for a in step.get("argv") or []]
        for i, (prefix, value) in sorted(secret_argv_positions(argv).items()):
            n += 1
            var = f"RL_CONSOLE_SECRET_ARG_{n}"
            secrets[var] = value
            argv[i] = f"{_SECRET_ARG}{var}\0{prefix}"
        env = step.get("env") or {}
        secrets.update({str(k): str(v) for k, v in env.items() if is_secret_name(str(k)) and v and v != MASK})
        public = {k: v for k, v in env.items() if not is_secret_name(str(k))}
        steps.append({**step, "argv": argv, "env": public})
    return {**plan, "steps": steps}, secrets


def sbatch_resource_args(spec: RunSpec, steps: list[dict[str, Any]], job_name: str) -> list[str]:
    o = spec.slurm
    if o.nodes < 1:
        raise SpecError(f"--nodes {o.nodes}: must be at least 1")
    args = [f"--job-name={job_name}", f"--nodes={o.nodes}"]
    for flag, value in (("--partition", o.partition), ("--account", o.account), ("--time", o.time)):
        if value:
            if value.startswith("-") or any(c.isspace() for c in value):
                raise SpecError(f"{flag} {value!r}: not a valid value")
            args.append(f"{flag}={value}")
    gpus = gpus_per_node(spec, steps)
    if gpus:
        args.append(f"--gres=gpu:{gpus}")
    if o.cpus_per_task is not None:
        if o.cpus_per_task < 1:
            raise SpecError(f"--cpus-per-task {o.cpus_per_task}: must be at least 1")
        args.append(f"--cpus-per-task={o.cpus_per_task}")
    return args


def render(run_dir: Path, plan: Any, spec: RunSpec) -> Submission:
    """Build the submission for ``plan`` (writes nothing)."""
    run_dir = Path(run_dir).resolve()
    pd, secrets = split_secrets(fill_run_dir(plan_dict(plan), run_dir), spec)
    steps = pd.get("steps") or []
    mode = choose_mode(spec)
    job_name = "rlc-" + _NAME_RE.sub("-", run_dir.name.lower()).strip("-")[:60]
    out_file = str(run_dir / "logs" / "slurm-%j.out")
    resources = sbatch_resource_args(spec, steps, job_name)
    warnings: list[str] = []
    env: dict[str, str] = {}
    if mode == "srun":
        prefix = ["srun", "--nodes=1", "--ntasks=1", "--kill-on-bad-exit=1"]
        if spec.slurm.cpus_per_task:  # srun does not inherit it from sbatch (Slurm >= 22.05)
            prefix.append(f"--cpus-per-task={spec.slurm.cpus_per_task}")
        if spec.slurm.container:
            prefix += [
                f"--container-image={spec.slurm.container}",
                f"--container-mounts={','.join(container_mounts(spec, run_dir))}",
            ]
        where = "in the container " if spec.slurm.container else ""
        header = f"# Each step runs as one srun task {where}on the first node of the allocation."
        text = _runner(pd, spec, run_dir, prefix, [header], workdir_flag=bool(spec.slurm.container))
        if spec.slurm.nodes > 1:
            warnings.append(
                "srun mode runs each step on the first node of the allocation; multi-node "
                "NeMo-RL runs should use ray.sub (--framework nemo-rl, a checkout with ray.sub, "
                "--container)"
            )
        script_name, cwd = "job.sbatch", None
        target = ["--kill-on-invalid-dep=yes", f"--chdir={run_dir}", str(run_dir / "slurm" / script_name)]
    else:  # ray.sub mode: the driver script runs inside the head container, steps without srun
        ray_sub = ray_sub_path(spec)
        assert ray_sub is not None
        header = "# Runs inside the Ray head container started by ray.sub (COMMAND)."
        text = _runner(pd, spec, run_dir, [], [header])
        script_name, cwd = "driver.sh", str(Path(spec.repo or "."))
        env = {
            "COMMAND": shlex.join(["bash", str(run_dir / "slurm" / script_name)]),
            "CONTAINER": str(spec.slurm.container),
            "MOUNTS": ",".join(container_mounts(spec, run_dir)),
            "BASE_LOG_DIR": str(run_dir),
        }
        if gpus := gpus_per_node(spec, steps):
            env["GPUS_PER_NODE"] = str(gpus)
        target = [str(ray_sub)]
    return Submission(
        mode=mode,
        script_name=script_name,
        script_text=text,
        sbatch_args=[*resources, f"--output={out_file}", "--no-requeue", *target],
        env=env,
        cwd=cwd,
        secret_env=secrets,
        warnings=warnings,
    )
