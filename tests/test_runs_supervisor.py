"""Launcher + supervisor with real processes: order, exit codes, skips, run folder, secrets, locking."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest
from runs_support import reap_runs, step, wait_finished

from console.rundir.ids import base_run_id, create_run_dir
from console.rundir.state import initial_state, read_state, update_state, write_state
from console.runs.launch import start_run
from console.runs.store import RunStore
from console.spec import RunSpec

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def runs_dir(tmp_path: Path):
    d = tmp_path / "runs"
    yield d
    assert reap_runs(d) == [], "a run left processes behind"


def test_steps_run_in_order_failure_skips_the_rest(runs_dir: Path) -> None:
    secret = "hf_" + "a" * 30
    plan = {
        "steps": [
            step(
                "first",
                "import os,sys; print('hello from', os.environ['RL_CONSOLE_RUN_ID']);"
                "print('stdin', repr(sys.stdin.read())); print('err', file=sys.stderr)",
                env={"HF_TOKEN": secret, "PLAIN": "x"},
            ),
            step("tolerated", "import sys; sys.exit(4)", on_failure="continue"),
            step("broken", "import sys; print('about to fail'); sys.exit(3)"),
            step("never", "print('must not run')"),
        ]
    }
    run_dir = start_run(RunSpec(runs_dir=str(runs_dir), env={"WANDB_API_KEY": "k" * 12}), plan=plan)
    state = wait_finished(run_dir)
    assert [s["status"] for s in state["steps"]] == ["passed", "failed", "failed", "skipped"]
    assert [s["exit_code"] for s in state["steps"]] == [0, 4, 3, None]
    assert state["steps"][3]["reason"] == "step broken failed (exit code 3)"
    assert state["status"] == "failed" and state["verdict"] == "Fail"
    log = (run_dir / "logs/01-first.log").read_text()
    assert f"hello from {os.path.realpath(run_dir)}" in log and "stdin ''" in log and "err" in log
    assert (run_dir / "logs/03-broken.exit").read_text().strip() == "3"
    assert not (run_dir / "logs/04-never.log").exists()
    # secrets reach the step but never the run folder's own files
    for name in ("spec.json", "plan.json", "state.json", "events.jsonl"):
        text = (run_dir / name).read_text()
        assert secret not in text and "k" * 12 not in text, name
    plan_json = json.loads((run_dir / "plan.json").read_text())
    assert plan_json["steps"][0]["env"] == {"HF_TOKEN": "***", "PLAIN": "x"}
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    kinds = [(e["type"], e.get("status")) for e in events if e["type"] in ("step_state", "run_state")]
    assert kinds[0] == ("run_state", "running") and kinds[-1] == ("run_state", "failed")
    assert ("step_state", "skipped") in kinds


def test_secret_reaches_the_step(runs_dir: Path) -> None:
    secret = "hf_" + "b" * 30
    plan = {
        "steps": [
            step(
                "s",
                "import os; assert os.environ['HF_TOKEN'].startswith('hf_b'); "
                "assert 'RL_CONSOLE_SECRETS' not in os.environ",
                env={"HF_TOKEN": secret},
            )
        ]
    }
    run_dir = start_run(RunSpec(runs_dir=str(runs_dir)), plan=plan)
    state = wait_finished(run_dir)
    assert state["verdict"] == "Pass", (run_dir / "logs/01-s.log").read_text()


def test_exit_code_recorded_when_supervisor_dies(runs_dir: Path) -> None:
    """The step wrapper writes the exit code even when nobody watches any more."""
    plan = {"steps": [step("slow", "import time; time.sleep(1.5); raise SystemExit(7)")]}
    run_dir = start_run(RunSpec(runs_dir=str(runs_dir)), plan=plan)
    exit_file = run_dir / "logs/01-slow.exit"
    deadline = time.monotonic() + 20
    while read_state(run_dir)["steps"][0]["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(read_state(run_dir)["supervisor_pid"], 9)
    while not exit_file.exists():
        assert time.monotonic() < deadline, "no exit file"
        time.sleep(0.05)
    assert exit_file.read_text().strip() == "7"
    # a follower settles the orphaned run from the folder
    from console.runs.recover import settle_lost_run

    time.sleep(2.1)
    assert settle_lost_run(run_dir)
    state = read_state(run_dir)
    assert state["steps"][0]["exit_code"] == 7 and state["verdict"] == "Incomplete"


def test_run_ids_sortable_readable_unique(tmp_path: Path) -> None:
    spec = RunSpec(framework="nemo-rl", levels=[0, 2], variants=["LoRA"])
    t = time.mktime((2026, 11, 21, 22, 36, 0, 0, 0, -1))
    assert base_run_id(spec, t) == "20261121-223600-nemo-rl-l02-lora"
    dirs = [create_run_dir(tmp_path, spec, t) for _ in range(3)]
    assert [d.name for d in dirs] == [
        "20261121-223600-nemo-rl-l02-lora",
        "20261121-223600-nemo-rl-l02-lora-2",
        "20261121-223600-nemo-rl-l02-lora-3",
    ]


def _bump(run_dir: str, n: int) -> None:
    for _ in range(n):
        update_state(Path(run_dir), lambda s: s.__setitem__("current_step", s["current_step"] + 1))


def test_two_writers_never_lose_updates(tmp_path: Path) -> None:
    """Two consoles (processes) updating one state.json under the lock: no lost or torn writes."""
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    write_state(run_dir, initial_state("r", [{"name": "a"}]))
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_bump, args=(str(run_dir), 150)) for _ in range(2)]
    for p in procs:
        p.start()
    seen_valid = 0
    while any(p.is_alive() for p in procs):
        seen_valid += isinstance(read_state(run_dir)["current_step"], int)  # never a torn file
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert read_state(run_dir)["current_step"] == 300
    assert seen_valid > 0


def test_store_lists_newest_first_and_resolves(runs_dir: Path) -> None:
    plan = {"steps": [step("s", "pass")]}
    a = start_run(RunSpec(runs_dir=str(runs_dir), variants=["one"]), plan=plan)
    b = start_run(RunSpec(runs_dir=str(runs_dir), variants=["two"]), plan=plan)
    wait_finished(a)
    wait_finished(b)
    store = RunStore(runs_dir)
    rows = store.list()
    assert [r["id"] for r in rows] == sorted([a.name, b.name], reverse=True)
    assert rows[0]["status"] == "passed" and rows[0]["progress"] == "1/1" and rows[0]["verdict"] == "Pass"
    assert store.resolve(a.name) == a and store.resolve(b.name[:-1] + "o") == b
    from console.errors import RunNotFound

    with pytest.raises(RunNotFound):
        store.resolve("nope")
    with pytest.raises(RunNotFound, match="ambiguous"):
        store.resolve(a.name[:8])


def test_rerun_with_remedy_links_and_applies(runs_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from console.runs.rerun import rerun_with_remedy

    plan = {"steps": [step("s", "pass")]}
    spec = RunSpec(runs_dir=str(runs_dir), env={"ROCR_VISIBLE_DEVICES": "0", "HF_TOKEN": "hf_" + "c" * 30})
    first = start_run(spec, plan=plan)
    wait_finished(first)
    monkeypatch.setenv("HF_TOKEN", "hf_" + "d" * 30)
    remedy = {
        "class": "rocr_visible_devices",
        "env": {"NCCL_DEBUG": "INFO"},
        "unset": ["ROCR_VISIBLE_DEVICES"],
    }
    second = rerun_with_remedy(first, remedy)  # the demo's real plan, rebuilt from the changed spec
    from console.runs.cancel import cancel_run

    cancel_run(second, grace=1.0)
    state = read_state(second)
    assert second.parent == first.parent and second != first
    new_spec = json.loads((second / "spec.json").read_text())
    assert new_spec["env"] == {"HF_TOKEN": "***", "NCCL_DEBUG": "INFO"}
    from console.runs.rerun import apply_remedy

    assert apply_remedy(RunSpec(overrides=["a=1"]), {"overrides": ["b=2", "a=1"]}, "x").overrides == [
        "a=1",
        "b=2",
    ]
    assert new_spec["extra"]["linked_from"] == first.name and new_spec["extra"]["remedy"]["unset"] == [
        "ROCR_VISIBLE_DEVICES"
    ]
    assert state["linked_from"] == first.name
    assert all(
        "ROCR_VISIBLE_DEVICES" in s["unset"] for s in json.loads((second / "plan.json").read_text())["steps"]
    )


def test_pipeline_failure_never_reaches_the_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A parser that raises is switched off; the triage engine and the log reading go on."""
    from console.events import EventBus, read_events
    from console.runs.pipeline import Pipeline

    log = tmp_path / "step.log"
    log.write_text("========================= Step 1/2 =========================\n  • Loss: nan\n")
    bus = EventBus(tmp_path / "events.jsonl")
    pipe = Pipeline(tmp_path, "nemo-rl", bus)
    pipe.start_step("s", log)

    class Broken:
        def feed(self, text: str, now: float | None = None) -> list:
            raise RuntimeError("parser bug")

    assert pipe.step is not None
    pipe.step.parser = Broken()
    pipe.tick()
    with open(log, "a") as fh:
        fh.write("last line without newline: Loss: nan")
    result = pipe.end_step(1)
    bus.close()
    assert "parser (s) disabled" in capsys.readouterr().err
    events, _ = read_events(tmp_path / "events.jsonl")
    assert any(e.type == "finding" and e.data.get("class") == "metric_failure" for e in events)
    assert result is not None and result["verdict"] == "Fail"
