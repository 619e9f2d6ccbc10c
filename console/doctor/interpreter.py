"""The interpreter the run itself uses, probed once: its executable, Python version, EXT_SUFFIX, the
versions of the frameworks' big packages, and where `megatron.bridge` / `megatron.core` come from.

NeMo-RL runs `uv run python` in its checkout; verl's wrapper runs `uv run --frozen --all-packages
--extra ... python3` unless VERL_USE_UV=0 (then `python3`). The command is taken from the plan's
`bridge-import` step (the same uv flags the run uses), or from `[interpreters]` in doctor.toml when no
plan was built. `uv run` would sync the environment (download, rewrite the venv), so the doctor runs
`uv run --no-sync --offline ...` only when the project environment already exists, and asks
`uv sync --dry-run --offline` with the run's flags whether the run's own `uv run` would download.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.commandtext import command_line
from console.doctor.catalog import doctor_catalog
from console.doctor.context import DoctorContext, expand
from console.doctor.probe import MARKER, ProbeResult, run_probe
from console.rundir.paths import fill_run_dir

PYTHON_NAMES = ("python", "python3")
_WOULD_RE = re.compile(r"^Would (download|install|uninstall|create project environment at:?)\s*(.*)$")

# argv: JSON {label: [distribution names]}. Versions first (flushed), then the imports (they may be slow).
PROBE = f"""
import importlib.metadata as md, importlib.util, json, sys, sysconfig
def version(names):
    for name in names:
        try:
            return md.version(name)
        except Exception:
            continue
    return None
def origin(name):
    try:
        spec = importlib.util.find_spec(name)
    except BaseException as exc:
        return "error: " + type(exc).__name__ + ": " + str(exc)[:200]
    if spec is None:
        return None
    return spec.origin if spec.origin and spec.origin != "namespace" else next(iter(spec.submodule_search_locations or []), None)
def bridge_path():
    try:
        import megatron.bridge as mb
    except ModuleNotFoundError as exc:
        return {{"missing": str(exc), "name": exc.name or ""}}
    except BaseException as exc:
        return {{"error": type(exc).__name__ + ": " + str(exc)}}
    return {{"file": getattr(mb, "__file__", None) or next(iter(getattr(mb, "__path__", [])), None)}}
out = {{"executable": sys.executable, "python": ".".join(map(str, sys.version_info[:3])),
       "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX") or ".so",
       "packages": {{label: version(names) for label, names in json.loads(sys.argv[1]).items()}}}}
print({MARKER!r} + json.dumps(out), flush=True)
out["megatron_core"] = origin("megatron.core")
out["bridge"] = bridge_path()
print({MARKER!r} + json.dumps(out), flush=True)
"""


@dataclass
class RunInterpreter:
    """How the run starts Python, and what probing it found."""

    argv: list[str]  # the run's own command prefix, e.g. ["uv", "run", "python"]
    cwd: str | None
    env: dict[str, str]
    source: str  # "plan step bridge-import" or "doctor.toml [interpreters]"
    probe_argv: list[str] = field(default_factory=list)  # what the doctor runs (no sync, offline)
    case: str = "ok"  # ok | no_uv | no_python | no_env | failed | timed_out
    problem: str = ""
    answer: dict[str, Any] = field(default_factory=dict)  # the probe's JSON
    stderr_tail: str = ""
    offline: dict[str, Any] = field(default_factory=dict)  # uv sync --dry-run --offline result
    # the same dry run for the other uv flag sets the plan's steps use in that checkout (+ "steps")
    offline_steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def uses_uv(self) -> bool:
        return bool(self.argv) and Path(self.argv[0]).name == "uv"

    @property
    def command(self) -> str:
        return command_line(self.argv)

    @property
    def usable(self) -> bool:
        return self.case == "ok" and bool(self.answer)

    def to_dict(self) -> dict[str, Any]:
        """The `interpreter` block of doctor JSON (also read by the report's Evidence)."""
        return {
            "command": self.argv,
            "cwd": self.cwd,
            "source": self.source,
            "probe": self.probe_argv,
            "status": self.case,
            "problem": self.problem or None,
            "executable": self.answer.get("executable"),
            "python": self.answer.get("python"),
            "ext_suffix": self.answer.get("ext_suffix"),
            "packages": dict(self.answer.get("packages") or {}),
            "megatron_core": self.answer.get("megatron_core"),
            "offline": dict(self.offline) or None,
            "offline_steps": [dict(o) for o in self.offline_steps],
        }


def interpreter_command(ctx: DoctorContext) -> tuple[list[str], dict[str, str], str | None, str]:
    """(argv prefix, env, cwd, source) the run starts Python with."""
    if ctx.is_demo:
        return [sys.executable], dict(ctx.env), ctx.cwd, "the console's own interpreter (the demo runs in it)"
    for step in ctx.steps():
        argv = [str(a) for a in step.get("argv") or []]
        idx = next((i for i, arg in enumerate(argv) if Path(arg).name in PYTHON_NAMES), None)
        if step.get("name") == "bridge-import" and idx is not None:
            env = dict(ctx.env)
            for key, value in (step.get("env") or {}).items():
                env[key] = expand(fill_run_dir(str(value), ctx.run_dir or ""), ctx.env)
            return argv[: idx + 1], env, step.get("cwd") or ctx.cwd, "the plan's bridge-import step"
    table = ctx.catalog["interpreters"]
    key = ctx.framework
    if ctx.framework == "verl":
        when = table["verl_uv_when"]  # a table, where the others are commands
        if ctx.setting("VERL_USE_UV") == "0" or any(
            (ctx.setting(name) or allowed[0]) not in allowed
            for name, allowed in (when.items() if isinstance(when, dict) else ())
        ):
            key = "verl_no_uv"
    command = table[key]
    engine = {**ctx.env, "ENGINE": ctx.setting("ENGINE") or "vllm"}
    argv = [expand(a, engine) for a in (command if isinstance(command, list) else [])]
    return argv, dict(ctx.env), ctx.cwd, "doctor.toml [interpreters] (no plan was built)"


def project_env_dir(cwd: str | None, env: dict[str, str]) -> Path | None:
    """The uv project environment `uv run` uses in `cwd`: $UV_PROJECT_ENVIRONMENT or <project>/.venv."""
    if not cwd:
        return None
    root = Path(cwd)
    while not (root / "pyproject.toml").is_file():
        if root.parent == root:
            return None
        root = root.parent
    named = env.get("UV_PROJECT_ENVIRONMENT")
    if named:
        p = Path(named).expanduser()
        return p if p.is_absolute() else root / p
    return root / ".venv"


def sync_flags(argv: list[str]) -> list[str]:
    """The flags of `uv run ... python` that `uv sync` takes as well (extras, groups, --frozen...)."""
    uv = doctor_catalog()["uv"]
    out: list[str] = []
    rest = argv[2:-1] if len(argv) > 2 else []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in uv["sync_flags"]:
            out.append(arg)
        elif arg in uv["sync_value_flags"] and i + 1 < len(rest):
            out += [arg, rest[i + 1]]
            i += 1
        elif arg.split("=", 1)[0] in uv["sync_value_flags"]:
            out.append(arg)
        i += 1
    return out


def parse_dry_run(text: str) -> dict[str, Any]:
    """What `uv sync --dry-run` says it would do: {"download": N, "install": N, "uninstall": N, "create": path}."""
    out: dict[str, Any] = {"download": 0, "install": 0, "uninstall": 0, "create": None, "no_changes": False}
    for line in text.splitlines():
        line = line.strip()
        if line == "Would make no changes":
            out["no_changes"] = True
        m = _WOULD_RE.match(line)
        if not m:
            continue
        verb, tail = m.groups()
        if verb.startswith("create"):
            out["create"] = tail.strip() or True
            continue
        count = re.match(r"(\d+)", tail)
        out[verb] = int(count.group(1)) if count else 0
    return out


def offline_check(
    uv: str, argv: list[str], cwd: str | None, env: dict[str, str], timeout: float
) -> dict[str, Any]:
    """`uv sync --dry-run --offline <the run's flags>`: would the run's `uv run` download or change anything?"""
    cmd = [uv, "sync", "--dry-run", "--offline", *sync_flags(argv)]
    probe = run_probe(cmd, env, cwd, timeout, stderr_limit=1 << 20)  # the counts precede the package list
    text = probe.stderr_tail
    result: dict[str, Any] = {"command": ["uv", *cmd[1:]], **parse_dry_run(text)}
    if probe.error or probe.timed_out or probe.returncode != 0:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        err = next((ln for ln in lines if ln.startswith("error:")), lines[-1] if lines else probe.problem())
        result["error"] = "timed out" if probe.timed_out else err[:300]
    return result


def step_flag_sets(ctx: DoctorContext, cwd: str | None, seen: list[str]) -> list[tuple[list[str], list[str]]]:
    """[(uv sync flags, step names)] of the plan's `uv run ...` steps in `cwd`, other than `seen`."""
    found: dict[tuple[str, ...], list[str]] = {}
    for step in ctx.steps():
        argv = [str(a) for a in step.get("argv") or []]
        if argv[:2] != ["uv", "run"] or (step.get("cwd") or ctx.cwd) != cwd:
            continue
        flags = sync_flags([*argv[: _command_index(argv)], "cmd"])
        if flags != seen:
            found.setdefault(tuple(flags), []).append(str(step.get("name")))
    return [(list(k), v) for k, v in found.items()]


def _command_index(argv: list[str]) -> int:
    """Index of the command `uv run [flags]` runs (the first word after the flags and their values)."""
    uv = doctor_catalog()["uv"]
    i = 2
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in uv["sync_value_flags"] or argv[i] in uv["run_value_flags"] else 1
    return i


def _resolve(ctx: DoctorContext) -> RunInterpreter:
    argv, env, cwd, source = interpreter_command(ctx)
    it = RunInterpreter(argv=argv, cwd=cwd, env=env, source=source)
    timeout = float(ctx.catalog["defaults"]["interpreter_timeout_s"])
    if it.uses_uv:
        uv = ctx.probes.which("uv")
        if not uv:
            it.case, it.problem = "no_uv", "uv is not on PATH"
            return it
        venv = project_env_dir(cwd, env)
        limit = float(ctx.catalog["defaults"]["uv_dry_run_timeout_s"])
        it.offline = offline_check(uv, argv, cwd, env, limit)
        most = int(ctx.catalog["defaults"]["uv_flag_sets"])
        for flags, steps in step_flag_sets(ctx, cwd, sync_flags(argv))[:most]:
            it.offline_steps.append(
                {**offline_check(uv, ["uv", "run", *flags, "python"], cwd, env, limit), "steps": steps}
            )
        if venv is not None and not (venv / "bin" / "python").exists():
            it.case, it.problem = "no_env", f"the uv project environment {venv} does not exist yet"
            return it
        it.probe_argv = [uv, "run", "--no-sync", "--offline", *argv[2:]]
    elif ctx.is_demo:  # the demo runs in this very interpreter: read it here, no subprocess
        it.probe_argv = [sys.executable]
        it.answer = _this_interpreter(ctx.catalog["versions"])
        return it
    else:
        exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
        if not exe:
            it.case, it.problem = "no_python", f"{argv[0]} is not on PATH"
            return it
        it.probe_argv = [exe, *argv[1:]]
    packages = {label: list(names) for label, names in ctx.catalog["versions"].items()}
    probe = run_probe([*it.probe_argv, "-c", PROBE, json.dumps(packages)], env, cwd, timeout)
    it.stderr_tail = probe.stderr_tail
    it.answer = dict(probe.payload or {})
    if probe.timed_out:
        it.case, it.problem = "timed_out", f"no complete answer within {timeout:.0f}s"
        if not it.answer:
            return it
        it.case = "ok"  # versions arrived; the imports timed out
        it.answer.setdefault("bridge", {"error": f"import timed out after {timeout:.0f}s"})
    elif not it.answer:
        it.case, it.problem = "failed", probe.problem()
    return it


def _this_interpreter(versions: dict[str, list[str]]) -> dict[str, Any]:
    """The probe's answer (versions, EXT_SUFFIX) for the console's own interpreter, read in-process."""
    import importlib.metadata as md

    def version(names: list[str]) -> str | None:
        for name in names:
            try:
                return md.version(name)
            except md.PackageNotFoundError:
                continue
        return None

    return {
        "executable": sys.executable,
        "python": ".".join(map(str, sys.version_info[:3])),
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX") or ".so",
        "packages": {label: version(list(names)) for label, names in versions.items()},
    }


def run_interpreter(ctx: DoctorContext) -> RunInterpreter:
    """The run's interpreter, probed once per doctor run (checks share it; they run in threads)."""
    with ctx.lock:
        cached = ctx.cache.get("interpreter")
        if cached is None:
            cached = _resolve(ctx)
            ctx.cache["interpreter"] = cached
        return cached


def bridge_probe(ctx: DoctorContext) -> tuple[ProbeResult, str] | None:
    """The run interpreter's `megatron.bridge` answer as a ProbeResult, and a label; None if it was not probed."""
    it = run_interpreter(ctx)
    if not it.usable or "bridge" not in it.answer:
        return None
    where = f"driver ({it.command} -> {it.answer.get('executable')})"
    return ProbeResult(0, dict(it.answer["bridge"]), it.stderr_tail), where


def python_argv(ctx: DoctorContext) -> tuple[list[str], str]:
    """(argv prefix, label) to run a probe with: the run's interpreter when it answered, else the
    console's own, labelled as such."""
    it = run_interpreter(ctx)
    if it.usable:
        return list(it.probe_argv), f"{it.command} -> {it.answer.get('executable')}"
    if ctx.is_demo:
        return [ctx.python], ctx.python
    why = f"the console's {ctx.python}; the run's `{it.command}` could not be probed: {it.problem}"
    return [ctx.python], why


def versions_text(it: RunInterpreter) -> str:
    packages = it.answer.get("packages") or {}
    return ", ".join(f"{label} {ver or 'not installed'}" for label, ver in packages.items())
