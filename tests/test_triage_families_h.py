"""Rule families added from the tuning split of ``tests/corpus/cases-h.jsonl`` (issue 12), each on real
excerpts of that split (read by id) and against the benign lines of the same family that must not fire:
Ray's memory monitor killing workers (a host OOM, ray_cluster per DESIGN.md) vs a notice that the session
disk is filling, a worker that cannot load the driver's actor class vs a Ray log that only mentions
pickling, and a trainer's "training finished" line that turns a later death into a teardown crash.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from triage_helpers import primary, tri_text  # noqa: E402

pytestmark = pytest.mark.timeout(60)
CASES = {
    d["id"]: d
    for d in map(json.loads, (Path(__file__).parent / "corpus" / "cases-h.jsonl").read_text().splitlines())
}
DONE = "Max number of steps has been reached, stopping training early\n"  # a completion marker


def excerpt(case_id: str) -> str:
    case = CASES[case_id]
    assert case["split"] == "tuning"  # rules and their tests come from the tuning split only
    return case["log_excerpt"] + "\n"


def rules(res: dict) -> set[str]:
    return {f["rule"] for f in res["findings"]}


@pytest.mark.parametrize(
    "case_id",
    [
        "h-oom-plantf-ray-workers-killed-memory-pressure",
        "h-oom-ray-nightly-head-node-oom-kills",
        "h-oom-ray-stress-test-memory-threshold-killed",
        "h-oom-ray-raylet-system-memory-low-killing",
    ],
)
def test_ray_memory_monitor_kill_is_a_host_oom_of_the_cluster(tmp_path: Path, case_id: str) -> None:
    res = tri_text(tmp_path, excerpt(case_id))
    assert "ray_memory_monitor_kill" in rules(res)
    assert primary(res)[:2] == ("Blocked", "ray_cluster")


def test_ray_memory_monitor_kill_soft_and_not_the_spilling_disk_notice(tmp_path: Path) -> None:
    # soft: Ray retries a task its memory monitor killed, so a run that completed survived it
    done = excerpt("h-oom-ray-stress-test-memory-threshold-killed") + DONE
    assert tri_text(tmp_path, done)["verdict"] == "Pass"
    disk = (
        "(raylet) [2024-06-07 10:29:42,226 E 37550 37590] (raylet) file_system_monitor.cc:111: /tmp/ray/"
        "session_2024-06-07_10-20-10_174083_37256 is over 95% full, available space: 102031302656; capacity: "
        "9524899491840. Object creation will fail if spilling is required.\n"
    )
    assert "ray_memory_monitor_kill" not in rules(tri_text(tmp_path, disk))


def test_death_after_training_finished_is_a_teardown_crash(tmp_path: Path) -> None:
    finished = excerpt("h-pass-primerl-training-finished-destroy-pg-warning")
    # the closing lines of a run that finished and only warned at exit: never a Fail
    assert tri_text(tmp_path, finished)["verdict"] in ("Pass", "Incomplete")
    death = "Segmentation fault (core dumped)\n"
    assert primary(tri_text(tmp_path, finished + death))[:2] == ("Fail", "teardown_crash")
    # the same death with no "training finished" line before it is a crash of the run itself
    running = "06-16 21:29:20 [TRAIN] [Rank 0] [INFO] [train.py:480] step 12 | loss 2.31\n"
    assert primary(tri_text(tmp_path, running + death))[1] != "teardown_crash"
    # nor does an unfinished-data notice count as the loop having returned
    notice = "WARNING: training finishedness check skipped; 3 shards of training completion data missing\n"
    assert primary(tri_text(tmp_path, notice + death))[1] != "teardown_crash"
