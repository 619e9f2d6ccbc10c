"""A training step that stops making progress is reported as a hang while it runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from runs_support import reap_runs, step, wait_finished, wait_for

from console.events import read_events
from console.runs.cancel import cancel_run
from console.runs.launch import start_run
from console.spec import RunSpec

pytestmark = pytest.mark.timeout(90)

STUCK = (
    "import time; print('=' * 25, 'Step 1/5', '=' * 25, flush=True); "
    "print('▶ Generating responses for batch of size 8...', flush=True); time.sleep(120)"
)
CHATTY = "import time\nfor i in range(8):\n    print('collected', i, flush=True); time.sleep(0.4)"


def _events(run_dir: Path, kind: str) -> list:
    events, _ = read_events(run_dir / "events.jsonl")
    return [e for e in events if e.type == kind]


def test_stalled_training_step_reports_hang(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    spec = RunSpec(runs_dir=str(runs), extra={"hang_timeout_s": 1.5})
    run_dir = start_run(spec, plan={"steps": [step("train", STUCK, kind="train")]})
    try:
        wait_for(lambda: bool(_events(run_dir, "hang")), 30, "a hang event")
        hang = _events(run_dir, "hang")[0]
        assert hang.step == "train" and hang.data["idle_s"] >= 1.5
        findings = [e for e in _events(run_dir, "finding") if e.data.get("class") == "hang"]
        assert findings, "the hang reaches triage as a finding"
    finally:
        cancel_run(run_dir, grace=1.0)
    assert reap_runs(runs) == []


def test_log_lines_keep_a_non_training_step_alive(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    spec = RunSpec(runs_dir=str(runs), extra={"hang_timeout_s": 1.5})
    run_dir = start_run(spec, plan={"steps": [step("unit", CHATTY, kind="check")]})
    wait_finished(run_dir)
    assert _events(run_dir, "hang") == []
