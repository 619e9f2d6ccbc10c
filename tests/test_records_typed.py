"""The TypedDicts of the run folder's JSON records are what the console really writes: a real run's
state.json and triage.json, a real plan, the doctor's and the triage engine's results are checked
key by key against them (no unknown key, none missing, every value of its type)."""

import json
from pathlib import Path

import pytest
from runs_support import reap_runs, step, wait_finished

from console.catalog.schema import validate
from console.doctor.model import DoctorResult
from console.doctor.registry import run_doctor
from console.plan import build_plan
from console.plan.model import PlanRecord
from console.rundir.model import State
from console.runs.launch import start_run
from console.spec import RunSpec
from console.triage.model import TriageResult, Verdict
from console.triage.scan import triage_files
from console.triage.verdict import run_verdict

pytestmark = pytest.mark.timeout(180)
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triage"


def test_a_real_run_writes_the_state_and_verdict_the_types_describe(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    plan = {
        "steps": [
            step("first", "print('step 1/2'); print('hello')"),
            step("broken", "import sys; print('Traceback (most recent call last):'); sys.exit(3)"),
            step("never", "print('must not run')"),
        ]
    }
    try:
        run_dir = start_run(RunSpec(runs_dir=str(runs)), plan=plan)
        state = wait_finished(run_dir)
    finally:
        assert reap_runs(runs) == []
    assert [s["status"] for s in state["steps"]] == ["passed", "failed", "skipped"]
    validate(json.loads((run_dir / "state.json").read_text()), State, "state.json")
    recorded = json.loads((run_dir / "triage.json").read_text())
    assert recorded["verdict"] == "Fail"
    validate(recorded, Verdict, "triage.json")
    validate(run_verdict(run_dir), Verdict, "run_verdict")


def test_a_plan_is_a_plan_record() -> None:
    plan = build_plan(RunSpec(framework="demo", levels=[0], variants=["nan"]))
    validate(plan.to_dict(), PlanRecord, "plan.json")
    validate(json.loads(json.dumps(plan.to_dict(redact=False))), PlanRecord, "plan.json")


def test_the_doctor_result_is_a_doctor_result() -> None:
    validate(run_doctor(RunSpec(framework="demo")), DoctorResult, "doctor --json")


@pytest.mark.parametrize("log", sorted(FIXTURES.rglob("*.log")), ids=lambda p: p.stem)
def test_every_triage_result_is_a_triage_result(log: Path) -> None:
    res = triage_files([log])
    validate(res, TriageResult, f"triage {log.name}")
    validate(json.loads(json.dumps(res)), TriageResult, f"triage --json {log.name}")


def test_a_triage_of_several_logs_names_the_file_of_each_finding() -> None:
    logs = sorted(FIXTURES.glob("*.log"))[:3]
    res = triage_files(logs)
    assert res["findings"] and {f["file"] for f in res["findings"]} <= {str(p) for p in logs}
    validate(res, TriageResult, "triage of three logs")
