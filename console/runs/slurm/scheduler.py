"""The Slurm client commands (sbatch, squeue, scontrol, sacct, scancel, srun) as argv lists, their
output parsed into records; a failure the user should see is a one-line :class:`SlurmError`."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from console.errors import ConsoleError
from console.runs.slurm import hostlist, states

TIMEOUT_S = 30.0
_SQUEUE_FORMAT = "%i|%T|%r|%N|%D"
_SACCT_FIELDS = "JobID,State,ExitCode,Reason,NodeList,NNodes"


class SlurmError(ConsoleError):
    """A Slurm command failed or is missing (exit 2 at the CLI)."""


@dataclass
class JobRecord:
    """What one of squeue/scontrol/sacct said about a job."""

    job_id: str
    state: str  # upper case base state: PENDING, RUNNING, COMPLETED, NODE_FAIL, ... or UNKNOWN
    reason: str | None = None
    exit_code: int | None = None  # the batch script's exit status
    signal: int | None = None  # the signal that ended it, when any
    nodes: list[str] = field(default_factory=list)
    num_nodes: int | None = None
    source: str = "squeue"

    @property
    def phase(self) -> str:
        return states.meaning(self.state).phase


def _run(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float = TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    if shutil.which(argv[0]) is None:
        raise SlurmError(f"{argv[0]} not found on PATH: run from a Slurm login node or inside an allocation")
    try:
        return subprocess.run(
            list(argv),
            env={**os.environ, **(env or {})},
            cwd=cwd,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise SlurmError(f"{argv[0]} did not answer within {timeout:.0f}s") from exc


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def base_state(raw: str) -> str:
    """``CANCELLED by 0`` -> ``CANCELLED``; ``CANCELLED+`` -> ``CANCELLED``; ``completed`` -> ``COMPLETED``."""
    word = raw.strip().split(" ", 1)[0] if raw.strip() else "UNKNOWN"
    return word.rstrip("+").upper() or "UNKNOWN"


def parse_exit_code(raw: str) -> tuple[int | None, int | None]:
    """Slurm's ``EXIT:SIGNAL`` -> (exit, signal or None)."""
    code, _, sig = raw.strip().partition(":")
    exit_code = _int(code)
    return (exit_code, _int(sig) or None) if exit_code is not None else (None, None)


expand_nodelist = hostlist.expand  # ``gpu[01-03,7],login`` -> the node names


def _record(
    job_id: str, state: str, reason: str, exit_code: str, nodes: str, num_nodes: str, source: str
) -> JobRecord:
    """A JobRecord from the raw fields any of the three commands prints."""
    code, sig = parse_exit_code(exit_code)
    reason = reason.strip()
    return JobRecord(
        job_id=job_id.strip(),
        state=base_state(state),
        reason=None if reason in ("", "None", "(null)") else reason,
        exit_code=code,
        signal=sig,
        nodes=expand_nodelist(nodes),
        num_nodes=_int(num_nodes),
        source=source,
    )


# ---- sbatch ------------------------------------------------------------------------------------
def parse_sbatch_parsable(stdout: str) -> str:
    """``sbatch --parsable`` prints ``jobid`` or ``jobid;cluster``."""
    line = _first_line(stdout)
    job_id = line.split(";", 1)[0].strip()
    if not job_id.isdigit():
        raise SlurmError(f"sbatch printed no job id: {line!r}")
    return job_id


def sbatch(argv_tail: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None) -> str:
    """Run ``sbatch --parsable <argv_tail>``; return the job id."""
    proc = _run(["sbatch", "--parsable", *argv_tail], env=env, cwd=cwd)
    if proc.returncode != 0:
        msg = _first_line(proc.stderr) or _first_line(proc.stdout) or f"exit {proc.returncode}"
        raise SlurmError(f"sbatch refused the job: {msg}")
    return parse_sbatch_parsable(proc.stdout)


# ---- squeue ------------------------------------------------------------------------------------
def parse_squeue(stdout: str) -> JobRecord | None:
    """One line of ``squeue -h -o '%i|%T|%r|%N|%D'``."""
    fields = _first_line(stdout).split("|")
    if len(fields) < 5:
        return None
    return _record(fields[0], fields[1], fields[2], "", fields[3], fields[4], "squeue")


def squeue(job_id: str) -> JobRecord | None:
    """The job as squeue sees it (all states), or None when squeue no longer knows it."""
    proc = _run(["squeue", "-h", "--states=all", "-j", str(job_id), "-o", _SQUEUE_FORMAT])
    if proc.returncode != 0:
        if "invalid job id" in (proc.stderr + proc.stdout).lower():
            return None
        raise SlurmError(f"squeue failed: {_first_line(proc.stderr) or proc.returncode}")
    return parse_squeue(proc.stdout)


# ---- scontrol ----------------------------------------------------------------------------------
def parse_scontrol_kv(stdout: str) -> dict[str, str]:
    """``scontrol show job -o ID`` -> {key: value} (values may not contain spaces, except Reason)."""
    out: dict[str, str] = {}
    line = _first_line(stdout)
    key = None
    for token in line.split(" "):
        if "=" in token and not token.startswith("="):
            key, _, value = token.partition("=")
            out[key] = value
        elif key is not None and token:
            out[key] += " " + token  # a value with spaces, e.g. Reason=... or Command=...
    return out


def parse_scontrol_job(stdout: str) -> JobRecord | None:
    kv = parse_scontrol_kv(stdout)
    if "JobId" not in kv:
        return None
    return _record(
        kv["JobId"],
        kv.get("JobState", "UNKNOWN"),
        kv.get("Reason", ""),
        kv.get("ExitCode", ""),
        kv.get("NodeList", ""),
        kv.get("NumNodes", "").split("-")[0],
        "scontrol",
    )


def scontrol_job(job_id: str) -> JobRecord | None:
    proc = _run(["scontrol", "show", "job", "-o", str(job_id)])
    if proc.returncode != 0:
        return None  # "Invalid job id specified": purged after MinJobAge
    return parse_scontrol_job(proc.stdout)


# ---- sacct -------------------------------------------------------------------------------------
def parse_sacct(stdout: str, job_id: str) -> JobRecord | None:
    """``sacct -n -P -X -j ID -o JobID,State,ExitCode,Reason,NodeList,NNodes``; the last record of the
    job itself (a requeued job has several)."""
    record = None
    for line in stdout.splitlines():
        f = line.split("|")
        if len(f) >= 6 and f[0].strip() == str(job_id):
            record = _record(f[0], f[1], f[3], f[2], f[4], f[5], "sacct")
    return record


def sacct(job_id: str) -> JobRecord | None:
    """The accounting record, or None when accounting is disabled or has no record yet."""
    if shutil.which("sacct") is None:
        return None
    proc = _run(["sacct", "-n", "-P", "-X", "-j", str(job_id), "-o", _SACCT_FIELDS])
    if proc.returncode != 0:
        # "Slurm accounting storage is disabled", or slurmdbd down: not an error for the caller
        return None
    return parse_sacct(proc.stdout, str(job_id))


def parse_node_addrs(stdout: str) -> dict[str, str]:
    """``scontrol show node -o`` (one node per line) -> {NodeName: NodeAddr}."""
    out: dict[str, str] = {}
    for line in stdout.splitlines():
        kv = parse_scontrol_kv(line)
        if kv.get("NodeName"):
            out[kv["NodeName"]] = (kv.get("NodeAddr") or kv["NodeName"]).strip()
    return out


def node_addrs() -> dict[str, str]:
    """Where each node is reached (NodeAddr; the name when scontrol cannot say)."""
    try:
        proc = _run(["scontrol", "show", "node", "-o"])
    except SlurmError:
        return {}
    return parse_node_addrs(proc.stdout) if proc.returncode == 0 else {}


# ---- scancel / srun ----------------------------------------------------------------------------
def scancel(job_id: str) -> None:
    proc = _run(["scancel", str(job_id)])
    if proc.returncode != 0:
        msg = _first_line(proc.stderr)
        if "already completing or completed" in msg.lower() or "invalid job id" in msg.lower():
            return  # nothing left to cancel
        raise SlurmError(f"scancel {job_id} failed: {msg or proc.returncode}")


def srun_overlap(
    job_id: str, nodes: int, argv: Sequence[str], timeout: float = 20.0
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` once on every node of a running job, beside its steps (``--overlap``)."""
    one_task_per_node = [f"--nodes={nodes}", "--ntasks-per-node=1", f"--ntasks={nodes}"]
    return _run(
        ["srun", "--overlap", f"--jobid={job_id}", *one_task_per_node, "--label", "--quiet", *argv],
        timeout=timeout,
    )
