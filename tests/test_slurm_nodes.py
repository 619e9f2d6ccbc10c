"""Multi-node pictures on a real local Slurm with two nodes (two slurmd on this host, ``slurmd -N``,
each with its own NodeName and port): per-node host and GPU samples, hostlists, and a node that
dies while srun is launching a step (Blocked, node_failure).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from runs_support import step, wait_finished, wait_for
from slurm_cluster import SlurmCluster, cluster_for_tests

from console.events import iter_events
from console.report import render_json
from console.rundir.state import read_state
from console.runs.launch import start_run
from console.runs.slurm import scheduler
from console.spec import RunSpec, SlurmOptions

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster() -> Iterator[SlurmCluster]:
    with cluster_for_tests(nodes=2) as c:
        yield c


def _events(run_dir: Path, kind: str) -> list[Any]:
    return [e for e in iter_events(run_dir / "events.jsonl") if e.type == kind]


class _RayMetrics(BaseHTTPRequestHandler):
    """Stand-in for Ray's metrics export on one node (there is no GPU here): one H100 at 40 GiB."""

    body = (
        'ray_node_gram_used{GpuDeviceName="NVIDIA H100 80GB HBM3",GpuIndex="0",ip="127.0.0.1"} 40960.0\n'
        'ray_node_gram_available{GpuDeviceName="NVIDIA H100 80GB HBM3",GpuIndex="0",ip="127.0.0.1"} 40960.0\n'
        'ray_node_gpus_utilization{GpuDeviceName="NVIDIA H100 80GB HBM3",GpuIndex="0",ip="127.0.0.1"} 71.0\n'
    )

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        data = self.body.encode()
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_two_node_job_is_sampled_per_node(cluster: SlurmCluster, tmp_path: Path) -> None:
    assert len(cluster.nodes) == 2
    spec = RunSpec(
        framework="nemo-rl",
        runs_dir=str(tmp_path),
        launcher="slurm",
        slurm=SlurmOptions(nodes=2),
        extra={"slurm_gpu_interval_s": 1.0, "slurm_ray_metrics_port": 1},
    )  # nothing listens on 1
    train = (
        "import time\n"
        "for i in range(1, 7):\n"
        "    print('=' * 20, f'Step {i}/6', '=' * 20, flush=True)\n"
        "    time.sleep(1.0)\n"
    )
    run_dir = start_run(spec, plan={"steps": [step("train", train, kind="train", cwd=str(tmp_path))]})
    final = wait_finished(run_dir, timeout=90)
    assert final["verdict"] == "Pass", json.dumps(final)
    assert sorted(final["slurm_nodes"]) == sorted(cluster.nodes)
    hosts = _events(run_dir, "host")
    by_node: dict[str, list[Any]] = {}
    for ev in hosts:
        by_node.setdefault(ev.data["node"], []).append(ev)
    assert sorted(by_node) == sorted(cluster.nodes)
    for node, evs in by_node.items():
        assert all(e.data["mem_total"] > 0 and e.data["source"] == "srun" for e in evs), node
        assert any(e.data["cpu"] is not None for e in evs), f"{node}: no CPU percent (needs two samples)"
    gpus = {e.data["node"]: e.data for e in _events(run_dir, "gpu")}
    assert sorted(gpus) == sorted(cluster.nodes)
    for data in gpus.values():
        # no GPU on this machine: said once per node, with why and what was asked
        assert data["available"] is False and data["devices"] == []
        assert "nvidia-smi not found" in data["reason"], data
        assert any(q.startswith("ray metrics") and "no answer" in q for q in data["queried"]), data
        assert any(q.startswith("srun --overlap nvidia-smi") for q in data["queried"]), data
    assert len(_events(run_dir, "gpu")) == 2  # "no GPU" is not repeated every sample
    _check_console_shows_each_node(run_dir, cluster.nodes, tmp_path)
    print(
        f"\nper-node samples: { {n: len(v) for n, v in by_node.items()} } host events; gpu: "
        f"{ {n: d['reason'] for n, d in gpus.items()} }"
    )


def _check_console_shows_each_node(run_dir: Path, nodes: list[str], tmp_path: Path) -> None:
    """The console's System tab (Textual, headless) shows a GPU and a host block per node."""
    import asyncio

    from console.tui.app import ConsoleApp

    os.environ.setdefault("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    app = ConsoleApp(run_dir.parent, open_run=run_dir)
    shown: dict[str, str] = {}

    async def main() -> None:
        async with app.run_test(size=(100, 40)) as pilot:
            for _ in range(100):
                if (
                    type(app.screen).__name__ == "MonitorScreen"
                    and app.screen.snapshot is not None
                    and app.screen.snapshot.gpu_nodes
                ):
                    break
                await pilot.pause(0.05)
            await pilot.press("4")
            await pilot.pause(0.2)
            shown["gpu"] = str(app.screen.query_one("#gpu-panel").render())
            shown["host"] = str(app.screen.query_one("#host-panel").render())

    asyncio.run(main())
    assert "GPUs per node (2)" in shown["gpu"] and "Hosts (2 nodes)" in shown["host"], shown
    for node in nodes:
        assert node in shown["gpu"] and node in shown["host"]
    assert shown["gpu"].count("no GPU data (no GPU (nvidia-smi not found))") == 2


def test_ray_metrics_port_is_the_first_gpu_source(cluster: SlurmCluster, tmp_path: Path) -> None:
    """A node whose Ray metrics port answers gives its GPUs from there (the address from NodeAddr)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RayMetrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        spec = RunSpec(
            framework="demo",
            runs_dir=str(tmp_path),
            launcher="slurm",
            slurm=SlurmOptions(nodes=2),
            extra={"slurm_gpu_interval_s": 1.0, "slurm_ray_metrics_port": server.server_address[1]},
        )
        run_dir = start_run(
            spec,
            plan={"steps": [step("work", "import time; time.sleep(4)", kind="check", cwd=str(tmp_path))]},
        )
        final = wait_finished(run_dir, timeout=90)
    finally:
        server.shutdown()
    assert final["verdict"] == "Pass"
    gpus = [e.data for e in _events(run_dir, "gpu")]
    # both nodes have NodeAddr=127.0.0.1, so both reach the stand-in
    assert {g["node"] for g in gpus} == set(cluster.nodes)
    for g in gpus:
        assert g["source"] == "ray" and g["available"] is True
        assert g["devices"][0]["mem_used"] == 40 * 2**30 and g["devices"][0]["util"] == 71.0


def test_hostlists_expand_through_scontrol_and_the_parser_alike(cluster: SlurmCluster) -> None:
    from console.runs.slurm import hostlist

    # (Slurm 22.05 refuses text after the last bracket, "n[1-2]x"; the parser accepts it)
    for text in ("rack[1-2]-node[01-02]", "a[1,3-5],b7", "gpu[08-11],login", "a[1-2]b[3-4]", "n[001-003]"):
        via_scontrol = cluster.run("scontrol", "show", "hostnames", text).stdout.split()
        assert hostlist.parse(text) == via_scontrol, text
        assert scheduler.expand_nodelist(text) == via_scontrol
    addrs = scheduler.node_addrs()
    assert addrs == {n: "127.0.0.1" for n in cluster.nodes}


def test_node_dying_while_srun_launches_a_step_is_blocked(cluster: SlurmCluster, tmp_path: Path) -> None:
    """slurmd of the node dies while step 1 runs (its slurmstepd lives on); step 2's srun cannot
    launch: srun exits 233 with "Task launch ... failed" -> Blocked, node_failure, not Fail."""
    spec = RunSpec(
        framework="demo", runs_dir=str(tmp_path), launcher="slurm", extra={"slurm_gpu_sampling": False}
    )
    plan = {
        "steps": [
            step(
                "first",
                "import time; print('first running', flush=True); time.sleep(3)",
                kind="check",
                cwd=str(tmp_path),
            ),
            step("second", "print('second ran')", kind="check", cwd=str(tmp_path)),
        ]
    }
    run_dir = start_run(spec, plan=plan)
    log1 = run_dir / "logs" / "01-first.log"
    wait_for(lambda: log1.exists() and "first running" in log1.read_text(), timeout=60, what="step 1 output")
    wait_for(lambda: bool(read_state(run_dir).get("slurm_nodes")), timeout=30, what="the job's node")
    node = read_state(run_dir)["slurm_nodes"][0]
    try:
        cluster.kill_slurmd(node)
        final = wait_finished(run_dir, timeout=120)
        srun_log = (run_dir / "logs" / "02-second.srun.log").read_text()
        assert "Task launch for" in srun_log or "Application launch failed" in srun_log, srun_log
        assert final["verdict"] == "Blocked", json.dumps(final)
        tri = json.loads((run_dir / "triage.json").read_text())
        assert tri["verdict"] == "Blocked" and tri["primary"]["class"] == "node_failure"
        assert final["steps"][0]["status"] == "passed"
        assert tri["slurm"]["state"] == final["slurm_state"] and tri["primary"]["step"] == "second"
        report = render_json(run_dir)  # the recorded verdict: report and console say the same
        assert report["result"] == "Blocked" and report["primary"]["class"] == "node_failure"
        print(
            f"\njob state {final['slurm_state']}, step 2 exit {final['steps'][1]['exit_code']}, "
            f"primary {tri['primary']['rule']}: {tri['primary']['evidence']}"
        )
    finally:
        cluster.stop_job_leftovers()
        cluster.start_slurmd(only=node)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and cluster.node_state(node) not in ("idle", "mixed"):
            time.sleep(0.5)
