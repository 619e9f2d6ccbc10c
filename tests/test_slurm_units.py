"""Slurm pieces that need no cluster: hostlists, the lock that works without flock, the node probe,
srun launch-failure lines (catalog data). Real files and real processes; the only injection is the
errno flock returns on a filesystem without it."""

from __future__ import annotations

import errno
import fcntl
import json
import multiprocessing
import os
import subprocess
import time
from pathlib import Path

import pytest

from console.rundir import lockfile
from console.rundir.lockfile import LockFile, LockTimeout, is_locked
from console.rundir.state import initial_state, read_state, update_state, write_state
from console.runs.slurm import hostlist, states
from console.runs.slurm.gpu import parse_probe, probe_argv

# ---- hostlists ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("rack[1-2]-node[01-02]", ["rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"]),
        ("a[1,3-5],b7", ["a1", "a3", "a4", "a5", "b7"]),
        ("gpu[08-11]", ["gpu08", "gpu09", "gpu10", "gpu11"]),
        ("n[098-101]", ["n098", "n099", "n100", "n101"]),
        ("n[1-3,10]", ["n1", "n2", "n3", "n10"]),
        ("login,gpu[1-2],x[0-1]y[7]", ["login", "gpu1", "gpu2", "x0y7", "x1y7"]),
        ("single", ["single"]),
        ("", []),
        ("(null)", []),
    ],
)
def test_hostlist_parser_expands_nested_and_padded_forms(text: str, names: list[str]) -> None:
    assert hostlist.parse(text) == names


@pytest.mark.parametrize("bad", ["n[1-", "n]1[", "n[a-b]", "n[3-1]", "n[1-2[3]]", "n[0-99999999]"])
def test_hostlist_parser_rejects_malformed_lists(bad: str) -> None:
    with pytest.raises(hostlist.HostlistError):
        hostlist.parse(bad)


def test_expand_without_scontrol_uses_the_parser() -> None:
    assert hostlist.expand("rack[1-2]-node[01-02]", use_scontrol=False) == hostlist.parse(
        "rack[1-2]-node[01-02]"
    )
    assert hostlist.expand("n[1-", use_scontrol=False) == ["n[1-"]  # malformed: kept, not crashed on


# ---- locks without flock ----------------------------------------------------------------------


@pytest.fixture
def no_flock(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """flock fails as on Lustre mounted without -o flock (ENOSYS); inherited by forked children."""
    calls = []

    def failing_flock(fd: int, op: int) -> None:
        calls.append(op)
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(lockfile, "_flock", failing_flock)
    return calls


@pytest.mark.parametrize("code", [errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP])
def test_lock_falls_back_to_an_exclusive_file_on_each_errno(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    def failing(fd: int, op: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(lockfile, "_flock", failing)
    a = LockFile(tmp_path / ".lock")
    assert a.acquire(blocking=False) and a.mode == "excl"
    owner = json.loads((tmp_path / ".lock.excl").read_text())
    assert owner["pid"] == os.getpid() and owner["host"] and owner["expires"] > time.time()
    b = LockFile(tmp_path / ".lock")
    assert b.acquire(blocking=False) is False
    assert is_locked(tmp_path / ".lock")
    a.release()
    assert not (tmp_path / ".lock.excl").exists()
    assert b.acquire(blocking=False)
    b.release()


def test_other_flock_errors_are_not_swallowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(fd: int, op: int) -> None:
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(lockfile, "_flock", failing)
    with pytest.raises(OSError):
        LockFile(tmp_path / ".lock").acquire()


def test_real_flock_is_used_where_it_works(tmp_path: Path) -> None:
    a = LockFile(tmp_path / ".lock")
    a.acquire()
    assert a.mode == "flock" and not (tmp_path / ".lock.excl").exists()
    fd = os.open(tmp_path / ".lock", os.O_RDWR)
    with pytest.raises(BlockingIOError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(fd)
    assert is_locked(tmp_path / ".lock")
    a.release()
    assert not is_locked(tmp_path / ".lock")


def test_expired_fallback_lock_is_taken_over_and_a_fresh_one_is_not(tmp_path: Path, no_flock: list) -> None:
    excl = tmp_path / ".lock.excl"
    excl.write_text(json.dumps({"host": "elsewhere", "pid": 1, "expires": time.time() + 60, "token": "x"}))
    with pytest.raises(LockTimeout):
        LockFile(tmp_path / ".lock").acquire(timeout=0.3)
    excl.write_text(json.dumps({"host": "elsewhere", "pid": 1, "expires": time.time() - 1, "token": "y"}))
    lock = LockFile(tmp_path / ".lock")
    lock.acquire(timeout=2)
    assert json.loads(excl.read_text())["pid"] == os.getpid()
    assert not list(tmp_path.glob("*.stale.*"))
    lock.release()


def test_lock_of_a_dead_process_on_this_host_is_taken_over_at_once(tmp_path: Path, no_flock: list) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / ".lock.excl").write_text(
        json.dumps({"host": lockfile._host(), "pid": dead.pid, "expires": time.time() + 3600, "token": "z"})
    )
    t0 = time.monotonic()
    with lockfile.exclusive(tmp_path / ".lock") as lock:
        assert lock.mode == "excl"
    assert time.monotonic() - t0 < 1.0


def test_refresh_keeps_a_long_lock_alive(tmp_path: Path, no_flock: list) -> None:
    lock = LockFile(tmp_path / "follow.lock", expiry_s=2.0)
    lock.acquire()
    time.sleep(1.2)
    lock.refresh()
    time.sleep(1.2)  # past the first expiry, within the refreshed one
    assert is_locked(tmp_path / "follow.lock")
    lock.release()
    assert not is_locked(tmp_path / "follow.lock")


def _bump(run_dir: str, n: int) -> None:
    for _ in range(n):
        update_state(Path(run_dir), lambda s: s.update(counter=s.get("counter", 0) + 1))


def test_state_updates_from_processes_serialise_without_flock(tmp_path: Path, no_flock: list) -> None:
    """Four processes x 25 read-modify-writes of state.json under the fallback lock: none lost."""
    write_state(tmp_path, initial_state("r", [{"name": "s"}]))
    ctx = multiprocessing.get_context("fork")  # the children inherit the failing flock
    procs = [ctx.Process(target=_bump, args=(str(tmp_path), 25)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert read_state(tmp_path)["counter"] == 100
    assert no_flock, "flock was tried first"
    assert not (tmp_path / ".lock.excl").exists()


# ---- the node probe -----------------------------------------------------------------------------


def test_node_probe_runs_here_and_parses_per_task(tmp_path: Path) -> None:
    fake_smi = tmp_path / "smi.py"
    fake_smi.write_text("print('0, NVIDIA H100 80GB HBM3, GPU-a, 1234, 81559, 17')\n")
    out = []
    for task, query in enumerate([["python3", str(fake_smi)], ["no-such-smi-here", "-q"]]):
        env = {**os.environ, "SLURMD_NODENAME": f"node{task + 1}"}  # what slurmd sets for each task
        proc = subprocess.run(probe_argv(query), capture_output=True, text=True, check=True, env=env)
        out += [f"{task}: {line}" for line in proc.stdout.splitlines()]
    by_node = parse_probe("\n".join(out), ["n1", "n2"])
    assert sorted(by_node) == ["node1", "node2"]
    probes = [by_node["node1"], by_node["node2"]]
    with_gpu, without = probes
    assert with_gpu.gpu_rc == 0 and with_gpu.gpu_lines == ["0, NVIDIA H100 80GB HBM3, GPU-a, 1234, 81559, 17"]
    assert without.no_gpu == "no-such-smi-here not found" and without.gpu_lines == []
    for p in probes:
        assert p.mem_total and p.mem_available is not None and p.cpu_ticks and p.load1 is not None


def test_probe_quotes_the_query() -> None:
    argv = probe_argv(["nvidia-smi", "--x=$(touch /tmp/pwned-rlc)"])
    assert argv[:2] == ["sh", "-c"] and "'--x=$(touch /tmp/pwned-rlc)'" in argv[2]


# ---- srun launch failures (catalog data) -----------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "srun: error: Task launch for StepId=1.1 failed on node vm: Communication connection failure",
        "srun: error: Application launch failed: Communication connection failure",
        "srun: error: Unable to create step for job 42: Requested nodes are busy",
        "srun: error: Node failure on gpu017",
    ],
)
def test_srun_launch_failure_lines_are_recognised(line: str) -> None:
    lf = states.launch_failure()
    hit = lf.first_match(["step output", "srun: Job step aborted", line])
    assert hit == (3, line)
    assert lf.class_id == "node_failure" and 233 in lf.exit_codes
    info = states.scheduler_class(lf.class_id)
    assert info and info["verdict"] == "Blocked"


@pytest.mark.parametrize(
    "line",
    [
        "srun: error: vm: task 0: Exited with exit code 1",
        "error: Task launch for StepId=1.1 failed on node vm",  # the program's own text, not srun's
        "RuntimeError: Application launch failed",
    ],
)
def test_other_srun_and_program_lines_are_not_launch_failures(line: str) -> None:
    assert states.launch_failure().first_match([line]) is None


def test_job_states_name_their_triage_class() -> None:
    assert states.meaning("NODE_FAIL").klass == "node_failure"
    assert states.meaning("PREEMPTED").klass == "scheduler_stop"
    assert states.failed_before_any_step().klass == "node_failure"
    assert states.scheduler_class("scheduler_stop")["verdict"] == "Blocked"
