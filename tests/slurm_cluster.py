"""A throw-away Slurm cluster on loopback for the Slurm tests: one node, or several
(``nodes=2``: more ``NodeName`` entries on this host, each served by its own ``slurmd -N NAME`` on
its own port, with per-node spool dir, pid file and log through ``%n``; Slurm 22.05 accepts this).

munged, slurmctld and slurmd run in the foreground (``-D``), as root, with every file (key, socket,
state, spool, logs, pid files) in one temp dir and a generated ``slurm.conf``. No accounting daemon:
``sacct`` answers "accounting storage is disabled" and the backend must cope with that.

Facts this relies on (see the feasibility notes): munged wants its socket dir o+x and the key 0400;
``AuthInfo=socket=`` points Slurm at that socket; ``ProctrackType=proctrack/linuxproc`` (no cgroup
freezer here); ``batch_sched_delay=0`` so jobs start at once; the scheduler's first cycle runs ~3 s
after slurmd registers; slurmstepd outlives slurmd, so teardown cancels jobs first and kills
leftover steps of *this* cluster by PID (found through their sockets in our spool dir).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

BINARIES = ("munged", "munge", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


def skip_reason() -> str | None:
    """Why the Slurm tests cannot run here, or None."""
    missing = missing_binaries()
    if missing:
        return (
            "local Slurm not installed (missing: "
            + ", ".join(missing)
            + "); apt-get install slurmctld slurmd slurm-client munge"
        )
    if os.geteuid() != 0:
        return "the local Slurm cluster fixture needs root (daemons run as SlurmUser=root)"
    return None


def _free_port_pair() -> int:
    """A port p such that p and p+1 are free on 127.0.0.1."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port >= 65000:
            continue
        with socket.socket() as s2:
            try:
                s2.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair on 127.0.0.1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SlurmCluster:
    """Start with ``start()``, always ``stop()`` (the pytest fixture does both)."""

    def __init__(self, base: Path, slurmd_timeout: int = 4, nodes: int = 1) -> None:
        self.base = base.resolve()
        self.node = socket.gethostname().split(".")[0]
        # more nodes: one more slurmd each on this host (``slurmd -N NAME``), on its own port, with
        # its own spool dir, pid file and log (``%n`` in slurm.conf)
        self.nodes = [self.node] + [f"rlcnode{i}" for i in range(2, nodes + 1)]
        self.slurmd_timeout = slurmd_timeout
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.conf = self.base / "slurm" / "slurm.conf"
        self.munge_socket = self.base / "munge" / "run" / "munge.socket.2"
        self.ctld_port = 0

    # ---- environment ---------------------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv),
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    # ---- bring-up ------------------------------------------------------------------------
    def _write_files(self) -> None:
        for d in ("munge/etc", "munge/run", "munge/lib", "slurm/state", "slurm/spool", "slurm/log", "log"):
            (self.base / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.base, 0o755)
        os.chmod(self.base / "munge", 0o755)
        os.chmod(self.base / "munge" / "run", 0o755)
        os.chmod(self.base / "munge" / "etc", 0o700)
        os.chmod(self.base / "munge" / "lib", 0o700)
        key = self.base / "munge" / "etc" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        hw = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
        hw_fields = hw.splitlines()[0].split(None, 1)[1]  # drop "NodeName=..."
        self.ctld_port = _free_port_pair()
        multi = len(self.nodes) > 1
        node_ports = [self.ctld_port + 1] + [_free_port() for _ in self.nodes[1:]]
        s = self.base / "slurm"
        for name in self.nodes if multi else []:
            (s / "spool" / name).mkdir(parents=True, exist_ok=True)
        true_bin = shutil.which("true") or "/bin/true"
        lines = [
            "ClusterName=rlconsole",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            "SlurmUser=root",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.ctld_port + 1}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={self.munge_socket}",
            "CredType=cred/munge",
            f"MailProg={true_bin}",
            f"StateSaveLocation={s / 'state'}",
            f"SlurmdSpoolDir={s / 'spool' / '%n'}" if multi else f"SlurmdSpoolDir={s / 'spool'}",
            f"SlurmctldPidFile={s / 'slurmctld.pid'}",
            f"SlurmdPidFile={s / ('slurmd-%n.pid' if multi else 'slurmd.pid')}",
            f"SlurmctldLogFile={s / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={s / 'log' / ('slurmd-%n.log' if multi else 'slurmd.log')}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "ReturnToService=2",
            "KillWait=2",
            f"SlurmdTimeout={self.slurmd_timeout}",
            "MessageTimeout=2",
            "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            *(
                f"NodeName={name} NodeHostname={self.node} NodeAddr=127.0.0.1"
                + (f" Port={port}" if multi else "")
                + f" {hw_fields} State=UNKNOWN"
                for name, port in zip(self.nodes, node_ports, strict=True)
            ),
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            # a partition whose limit no 10-minute job can meet: jobs pend there for ever
            "PartitionName=tiny Nodes=ALL Default=NO MaxTime=1 State=UP",
        ]
        self.conf.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def _start(self, name: str, argv: list[str]) -> None:
        out = open(self.base / "log" / f"{name}.out", "wb")  # noqa: SIM115
        try:
            self.procs[name] = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, **self.env},
            )
        finally:
            out.close()

    def _wait(self, what: str, fn, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited ({p.returncode}) while waiting for {what}: "
                        + self.daemon_log(name)[-2000:]
                    )
            with contextlib.suppress(Exception):
                if fn():
                    return
            time.sleep(0.1)
        raise RuntimeError(f"timed out after {timeout}s waiting for {what}")

    def daemon_log(self, name: str) -> str:
        parts = []
        for p in (self.base / "log" / f"{name}.out", self.base / "slurm" / "log" / f"{name}.log"):
            with contextlib.suppress(OSError):
                parts.append(p.read_text(errors="replace"))
        return "\n".join(parts)

    def start(self) -> SlurmCluster:
        self._write_files()
        self._start(
            "munged",
            [
                "munged",
                "--foreground",
                f"--socket={self.munge_socket}",
                f"--key-file={self.base / 'munge' / 'etc' / 'munge.key'}",
                f"--pid-file={self.base / 'munge' / 'run' / 'munged.pid'}",
                f"--seed-file={self.base / 'munge' / 'lib' / 'munged.seed'}",
                f"--log-file={self.base / 'log' / 'munged.log'}",
            ],
        )
        self._wait("munged", lambda: self.munge_socket.exists())
        self._start("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self._wait("slurmctld", lambda: "is UP" in self.run("scontrol", "ping", check=False).stdout)
        self.start_slurmd()
        self._wait("scheduler first cycle", self._scheduler_cycled, timeout=30)
        return self

    def start_slurmd(self, only: str | None = None) -> None:
        """Start the slurmd of every node (or of ``only``) that is not running."""
        names = [n for n in self.nodes if only in (None, n)]
        for name in names:
            key = self._slurmd_key(name)
            if key in self.procs and self.procs[key].poll() is None:
                continue
            self._start(key, ["slurmd", "-D", "-f", str(self.conf), "-N", name])
        for name in names:
            self._wait(
                f"node {name} idle",
                lambda n=name: self.node_state(n) in ("idle", "mixed", "allocated"),
                timeout=30,
            )

    def _scheduler_cycled(self) -> bool:
        out = self.run("sdiag", check=False).stdout
        in_main = False
        for line in out.splitlines():
            if "Main schedule statistics" in line:
                in_main = True
            elif in_main and "Total cycles:" in line:
                return int(line.split(":")[1]) > 0
        return False

    def node_state(self, node: str | None = None) -> str:
        return (
            self.run("sinfo", "-h", "-n", node or self.node, "-o", "%T", check=False)
            .stdout.strip()
            .split("\n")[0]
        )

    def _slurmd_key(self, node: str | None) -> str:
        return "slurmd" if node in (None, self.node) else f"slurmd-{node}"

    def kill_slurmd(self, node: str | None = None) -> None:
        """SIGKILL a node's slurmd (the node dies as far as slurmctld knows; slurmstepd lives on)."""
        p = self.procs.pop(self._slurmd_key(node), None)
        if p is not None and p.poll() is None:
            p.kill()
            p.wait(timeout=10)

    # ---- teardown ------------------------------------------------------------------------
    def _stepd_pids(self) -> list[int]:
        """slurmstepd processes of this cluster: those holding a socket in our spool dir."""
        spool = str(self.base / "slurm" / "spool")
        pids: set[int] = set()
        inodes: set[str] = set()
        with contextlib.suppress(OSError), open("/proc/net/unix", encoding="ascii", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 8 and parts[7].startswith(spool + "/"):
                    inodes.add(parts[6])
        if not inodes:
            return []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                for fd in (proc / "fd").iterdir():
                    with contextlib.suppress(OSError):
                        target = os.readlink(fd)
                        if target.startswith("socket:[") and target[8:-1] in inodes:
                            pids.add(int(proc.name))
                            break
        return sorted(pids)

    def _kill_sessions_of(self, pids: list[int]) -> None:
        sids = set()
        for pid in pids:
            with contextlib.suppress(OSError):
                sids.add(os.getsid(pid))
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                with contextlib.suppress(OSError):
                    if os.getsid(int(proc.name)) in sids:
                        os.kill(int(proc.name), signal.SIGKILL)

    def stop_job_leftovers(self) -> None:
        """Kill slurmstepd processes of this cluster and their sessions (slurmd gone, or cancel too slow)."""
        spool = self.base / "slurm" / "spool"
        for _ in range(20):
            if not spool.exists() or not any(p.is_socket() for p in spool.rglob("*")):
                break
            stepds = self._stepd_pids()
            if not stepds:
                break
            self._kill_sessions_of(stepds)
            time.sleep(0.1)

    def stop(self) -> None:
        ctld = self.procs.get("slurmctld")
        slurmd = self.procs.get("slurmd")
        if ctld and ctld.poll() is None and slurmd and slurmd.poll() is None:
            with contextlib.suppress(Exception):
                jobs = self.run("squeue", "-h", "-o", "%A", check=False).stdout.split()
                if jobs:
                    self.run("scancel", *jobs, check=False)
                    deadline = time.monotonic() + 15
                    while (
                        time.monotonic() < deadline
                        and self.run("squeue", "-h", "-o", "%A", check=False).stdout.strip()
                    ):
                        time.sleep(0.2)
        self.stop_job_leftovers()
        for name in [n for n in self.procs if n.startswith("slurmd-")] + ["slurmd", "slurmctld", "munged"]:
            p = self.procs.pop(name, None)
            if p is None or p.poll() is not None:
                continue
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)


@contextlib.contextmanager
def slurm_cluster(base: Path, nodes: int = 1) -> Iterator[SlurmCluster]:
    cluster = SlurmCluster(base, nodes=nodes)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@contextlib.contextmanager
def cluster_for_tests(nodes: int = 1) -> Iterator[SlurmCluster]:
    """A started cluster in a fresh /tmp dir with ``SLURM_CONF`` exported to this process (and so to
    the detached followers and jobs it starts); everything undone afterwards. Skips when Slurm is
    not installed or not root."""
    import tempfile

    import pytest

    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    old = os.environ.get("SLURM_CONF")
    with tempfile.TemporaryDirectory(prefix="rlc-slurm-", dir="/tmp") as base:
        os.chmod(base, 0o755)  # munged wants every parent of its socket dir o+x
        cluster = SlurmCluster(Path(base) / "c", nodes=nodes)
        try:
            cluster.start()
            os.environ["SLURM_CONF"] = str(cluster.conf)
            yield cluster
        finally:
            cluster.stop()
            if old is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = old
