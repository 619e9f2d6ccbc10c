"""console.monitor.procs: a step's process group is recognised by its marker once its leader is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from console.monitor.procs import RUN_ID_ENV, group_is_runs, has_marker, process_env

pytestmark = pytest.mark.timeout(60)


def test_group_without_its_leader_is_the_runs_only_with_the_marker(tmp_path: Path) -> None:
    marker = str(tmp_path / "run")
    pidfile = tmp_path / "child.pid"
    # the leader starts a child in its own group and exits: the group lives on in the child
    code = (
        "import subprocess, sys, pathlib;"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']);"
        f"pathlib.Path({str(pidfile)!r}).write_text(str(p.pid))"
    )
    leader = subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, RUN_ID_ENV: marker}, start_new_session=True
    )
    ctime = psutil.Process(leader.pid).create_time()
    leader.wait(10)
    deadline = time.monotonic() + 10
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pidfile.read_text())
    try:
        assert os.getpgid(child) == leader.pid
        assert process_env(child, RUN_ID_ENV) == marker and has_marker(child, f"{RUN_ID_ENV}={marker}")
        assert group_is_runs(leader.pid, ctime, marker)
        assert not group_is_runs(leader.pid, ctime, marker + "-other")
    finally:
        os.kill(child, 9)
