"""Records you can trust (issue 13): redaction by structure, secrets kept out of the supervisor's
environment and the whole run folder, a full disk and a lost supervisor ending with a verdict seen the
same everywhere, PID-reuse-safe signals, evidence kept in the run folder, bad input leaving nothing.

Real processes, real files, a real tmpfs for the full disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from runs_support import PY, ROOT, cli, reap_runs, step, takes_ctrl_c, wait_finished, wait_for

from console.rundir.state import initial_state, read_state, write_state
from console.runs.cancel import cancel_run
from console.runs.launch import start_run
from console.runs.recover import supervisor_lost
from console.runs.store import RunStore
from console.spec import RunSpec, SlurmOptions

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def runs_dir(tmp_path: Path):
    d = tmp_path / "runs"
    yield d
    assert reap_runs(d) == [], "a run left processes behind"


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr


# --------------------------------------------------------------------------- redaction by structure
def test_names_that_only_look_secret_are_kept() -> None:
    from console.redact import is_secret_name, redact_argv, redact_obj, redact_text

    argv = [
        "python",
        "main.py",
        "data.reward_fn_key=data_source",
        "data.prompt_key=prompt",
        "data.max_prompt_tokens=512",
        "wandb.api_key=abcd1234",
        "--hf-token",
        "tok-value",
        "--token=xyz9",
        "x=hf_" + "a" * 30,
    ]
    assert redact_argv(argv) == [
        "python",
        "main.py",
        "data.reward_fn_key=data_source",
        "data.prompt_key=prompt",
        "data.max_prompt_tokens=512",
        "wandb.api_key=***",
        "--hf-token",
        "***",
        "--token=***",
        "x=***",
    ]
    for name in ("HF_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_PAT", "NGC_API_KEY"):
        assert is_secret_name(name), name
    for name in (
        "data.reward_fn_key",
        "SSH_AUTH_SOCK",
        "HF_TOKEN_PATH",
        "max_tokens",
        "tokenizer",
        "PYTHONPATH",
    ):
        assert not is_secret_name(name), name
    # structure kept: a JSON string ending in an override is not eaten (the old regex ate its quote)
    obj = {
        "cmd": "python x.py data.reward_fn_key=data_source",
        "env": {"HF_TOKEN": "abc"},
        "line": "export HF_TOKEN=abcdef",
    }
    out = redact_obj(obj)
    assert out["cmd"] == obj["cmd"] and out["env"]["HF_TOKEN"] == "***"
    assert out["line"] == "export HF_TOKEN=***"
    json.loads(json.dumps(out))
    assert redact_text("seen planted-value here", ["planted-value"]) == "seen *** here"


def test_report_of_a_run_ending_in_a_key_override(runs_dir: Path) -> None:
    """verl's data.reward_fn_key=data_source as the last word: report must not crash or mask it."""
    code = "import sys; print('args', sys.argv[1:]); print('Training complete')"
    plan = {
        "steps": [
            step(
                "train",
                code,
                kind="train",
                deliverable="framework_run",
                argv=[PY, "-u", "-c", code, "data.reward_fn_key=data_source"],
            )
        ]
    }
    spec = RunSpec(framework="verl", runs_dir=str(runs_dir), overrides=["data.reward_fn_key=data_source"])
    run_dir = start_run(spec, plan=plan)
    wait_finished(run_dir)
    plan_json = json.loads((run_dir / "plan.json").read_text())
    assert plan_json["steps"][0]["argv"][-1] == "data.reward_fn_key=data_source"
    assert json.loads((run_dir / "spec.json").read_text())["overrides"] == ["data.reward_fn_key=data_source"]
    for fmt in ("json", "md"):
        proc = cli("report", str(run_dir), "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        _no_traceback(proc)
        assert "data.reward_fn_key=data_source" in proc.stdout
    json.loads(cli("report", str(run_dir), "--format", "json").stdout)


# --------------------------------------------------------------------------- secrets
ENV_SECRET = "planted-step-env-secret-5551"
SUBMIT_SECRET = "planted-submit-env-secret-7771"
ARGV_SECRET = "planted-argv-secret-9991"


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def test_no_secret_in_the_supervisor_environ_nor_anywhere_in_the_run_folder(
    runs_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", SUBMIT_SECRET)  # the submitting shell's token
    go = tmp_path / "go"
    code = (
        "import hashlib, os, sys, time\n"
        "def h(v): return hashlib.sha256(v.encode()).hexdigest()\n"
        f"assert h(os.environ['MY_SERVICE_TOKEN']) == {_sha(ENV_SECRET)!r}\n"
        f"assert h(os.environ['HF_TOKEN']) == {_sha(SUBMIT_SECRET)!r}\n"
        f"assert h(sys.argv[-1]) == {_sha(ARGV_SECRET)!r}\n"
        "print('env', os.environ['MY_SERVICE_TOKEN'], flush=True)\n"
        "print('submit', os.environ['HF_TOKEN'], file=sys.stderr, flush=True)\n"
        "sys.stdout.write('partial ' + sys.argv[-1]); sys.stdout.flush()\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
        "print(' argv', sys.argv[-1])\n"
    )
    plan = {
        "steps": [
            step(
                "leaky",
                code,
                env={"MY_SERVICE_TOKEN": ENV_SECRET},
                argv=[PY, "-u", "-c", code, "--api-key", ARGV_SECRET],
            )
        ]
    }
    run_dir = start_run(RunSpec(runs_dir=str(runs_dir), env={"MY_SERVICE_TOKEN": ENV_SECRET}), plan=plan)
    wait_for(lambda: read_state(run_dir)["steps"][0]["status"] == "running", what="the step to start")
    sup = read_state(run_dir)["supervisor_pid"]
    wait_for(lambda: b"partial" in (run_dir / "logs/01-leaky.log").read_bytes(), what="the partial line")
    environ = Path(f"/proc/{sup}/environ").read_bytes() + Path(f"/proc/{sup}/cmdline").read_bytes()
    for secret in (ENV_SECRET, SUBMIT_SECRET, ARGV_SECRET):
        assert secret.encode() not in environ, f"supervisor environ holds {secret}"
    go.touch()
    state = wait_finished(run_dir)
    log = (run_dir / "logs/01-leaky.log").read_text()
    assert state["verdict"] == "Pass", log  # the step got every secret
    assert "env ***" in log and "submit ***" in log and "partial ***" in log and " argv ***" in log
    for path in _files(run_dir):
        data = path.read_bytes()
        for secret in (ENV_SECRET, SUBMIT_SECRET, ARGV_SECRET):
            assert secret.encode() not in data, f"{path.relative_to(run_dir)} holds {secret}"


def test_slurm_scripts_take_secrets_from_the_submitting_environment(tmp_path: Path) -> None:
    from console.runs.slurm.script import render

    repo = tmp_path / "repo"
    repo.mkdir()
    spec = RunSpec(
        framework="nemo-rl",
        repo=str(repo),
        launcher="slurm",
        slurm=SlurmOptions(),
        env={"HF_TOKEN": ENV_SECRET},
    )
    plan = {
        "steps": [
            {
                "name": "train",
                "argv": [
                    "uv",
                    "run",
                    "x.py",
                    f"wandb.api_key={ARGV_SECRET}",
                    "data.reward_fn_key=data_source",
                ],
                "env": {"HF_TOKEN": ENV_SECRET},
                "cwd": str(repo),
            }
        ]
    }
    sub = render(tmp_path / "run", plan, spec)
    shown = sub.script_text + sub.command_text() + sub.preview()
    assert ENV_SECRET not in shown and ARGV_SECRET not in shown
    word = 'wandb.api_key="${RL_CONSOLE_SECRET_ARG_1}"'
    assert word in sub.script_text
    assert "data.reward_fn_key=data_source" in sub.script_text
    assert sub.secret_env == {"HF_TOKEN": ENV_SECRET, "RL_CONSOLE_SECRET_ARG_1": ARGV_SECRET}
    # the shell expands it back to the real argument
    out = subprocess.run(
        ["bash", "-c", f"printf %s {word}"],
        capture_output=True,
        text=True,
        env={"RL_CONSOLE_SECRET_ARG_1": ARGV_SECRET, "PATH": os.environ["PATH"]},
    )
    assert out.stdout == f"wandb.api_key={ARGV_SECRET}"


# --------------------------------------------------------------------------- a full disk
@pytest.fixture
def small_disk(tmp_path: Path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a 2 MiB tmpfs here: {proc.stderr.strip() or proc.returncode}")
    try:
        yield mnt
    finally:
        reap_runs(mnt / "runs")
        for _ in range(20):
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)


FILL_A_FILE = (
    "import os\n"
    "with open(os.path.join(os.environ['RL_CONSOLE_RUN_DIR'], 'fill'), 'wb') as fh:\n"
    "    for _ in range(64): fh.write(b'x' * 65536); fh.flush()\n"
)
FILL_THE_LOG = "import sys\nfor i in range(80000): print('a log line that fills the disk', i)\n"


@pytest.mark.parametrize("code", [FILL_A_FILE, FILL_THE_LOG], ids=["step-fails", "log-full-step-passes"])
def test_disk_full_ends_blocked_no_space_everywhere(small_disk: Path, code: str) -> None:
    runs = small_disk / "runs"
    plan = {"steps": [step("fill", code), step("after", "print('never')")]}
    run_dir = start_run(RunSpec(runs_dir=str(runs)), plan=plan)
    state = wait_finished(run_dir, timeout=60)
    assert (state["status"], state["verdict"]) == ("blocked", "Blocked")
    assert state["error"].startswith("no_space")
    assert state["steps"][1]["status"] == "skipped"
    triage = json.loads((run_dir / "triage.json").read_text())
    assert triage["verdict"] == "Blocked" and triage["primary"]["class"] == "no_space"
    rows = json.loads(cli("ls", "--runs-dir", str(runs), "--json").stdout)
    assert (rows[0]["verdict"], rows[0]["error"][:8]) == ("Blocked", "no_space")
    show = cli("show", str(run_dir))
    assert "Blocked" in show.stdout and "no_space" in show.stdout
    attach = cli("attach", str(run_dir), "--headless")
    assert attach.returncode == 3 and "Verdict: Blocked" in attach.stdout
    _no_traceback(attach)
    report = cli("report", str(run_dir), "--format", "json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["result"] == "Blocked" and data["primary"]["class"] == "no_space"
    from console.tui.rundata import load_row

    assert load_row(run_dir).verdict == "Blocked"  # type: ignore[union-attr]


def test_commands_on_a_full_disk_print_one_line(small_disk: Path) -> None:
    runs = small_disk / "runs"
    runs.mkdir()
    with contextlib.suppress(OSError), open(small_disk / "fill", "wb") as fh:
        while True:
            fh.write(b"x" * 65536)
            fh.flush()
    proc = cli("run", "--framework", "demo", "--runs-dir", str(runs), "--detach", "--no-doctor")
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    _no_traceback(proc)
    assert list(runs.iterdir()) == []


# --------------------------------------------------------------------------- a lost supervisor
def test_sigkilled_supervisor_is_incomplete_in_ls_show_tui_and_report(runs_dir: Path) -> None:
    from console.tui.rundata import RunModel, load_row

    plan = {"steps": [step("slow", "import time; time.sleep(1.0); print('done')"), step("next", "print(1)")]}
    run_dir = start_run(RunSpec(runs_dir=str(runs_dir)), plan=plan)
    wait_for(lambda: read_state(run_dir)["steps"][0]["status"] == "running", what="the step to start")
    os.kill(read_state(run_dir)["supervisor_pid"], signal.SIGKILL)
    wait_for(lambda: (run_dir / "logs/01-slow.exit").exists(), what="the step to end on its own")
    time.sleep(0.3)
    row = load_row(run_dir)  # the TUI's home screen, first to look
    assert row is not None and (row.status, row.verdict) == ("failed", "Incomplete")
    rows = json.loads(cli("ls", "--runs-dir", str(runs_dir), "--json").stdout)
    assert (rows[0]["status"], rows[0]["verdict"], rows[0]["error"]) == (
        "failed",
        "Incomplete",
        "supervisor lost",
    )
    assert "supervisor lost" in cli("ls", "--runs-dir", str(runs_dir)).stdout
    show = cli("show", str(run_dir))
    assert "Incomplete" in show.stdout and "supervisor lost" in show.stdout
    state = read_state(run_dir)
    assert [s["status"] for s in state["steps"]] == ["passed", "skipped"]
    assert json.loads((run_dir / "triage.json").read_text())["verdict"] == "Incomplete"
    report = json.loads(cli("report", str(run_dir), "--format", "json").stdout)
    assert report["result"] == "Incomplete" and "supervisor lost" in report["summary"]
    assert RunModel(run_dir).refresh().state["verdict"] == "Incomplete"


def test_signals_only_reach_processes_whose_identity_matches(runs_dir: Path) -> None:
    """A recorded pid now used by another process (PID reuse) is neither 'alive' nor signalled."""
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        runs_dir.mkdir(parents=True)
        run_dir = runs_dir / "20260101-000000-demo-l0"
        run_dir.mkdir()
        state = initial_state(run_dir.name, [{"name": "s"}])
        ctime = psutil.Process(stranger.pid).create_time()
        state.update(
            status="running",
            started=time.time() - 60,
            supervisor_pid=stranger.pid,
            supervisor_create_time=ctime - 100.0,
        )
        state["steps"][0].update(
            status="running", pid=stranger.pid, pgid=stranger.pid, create_time=ctime - 100.0
        )
        write_state(run_dir, state)
        assert supervisor_lost(read_state(run_dir), run_dir)
        assert cancel_run(run_dir, grace=0.2)
        assert stranger.poll() is None, "cancel signalled a process that is not the run's"
        assert read_state(run_dir)["verdict"] == "Cancelled"
        # the same folder, as ls sees it: not 'running forever'
        run2 = runs_dir / "20260101-000001-demo-l0"
        run2.mkdir()
        write_state(run2, state | {"id": run2.name})
        row = next(r for r in RunStore(runs_dir).list() if r["id"] == run2.name)
        assert (row["verdict"], row["error"]) == ("Incomplete", "supervisor lost")
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


# --------------------------------------------------------------------------- evidence stays put
def _metrics_step(repo: Path, loss: str) -> dict:
    code = (
        "import json, os\n"
        "os.makedirs('out/tb', exist_ok=True)\n"
        f"open('out/metrics.json', 'w').write(json.dumps({{'train/loss': {{'1': float({loss!r})}}}}))\n"
        f"open('out/tb/events.out.tfevents.1.host', 'w').write('loss ' + {loss!r})\n"
        "print('Max number of steps has been reached, stopping training early')\n"
    )
    return step(
        "train",
        code,
        kind="train",
        deliverable="framework_run",
        cwd=str(repo),
        metrics_json="out/metrics.json",
        tb_dir="out/tb",
    )


def test_two_runs_sharing_a_checkout_keep_their_own_evidence(runs_dir: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    first = start_run(
        RunSpec(framework="demo", runs_dir=str(runs_dir)), plan={"steps": [_metrics_step(repo, "1.5")]}
    )
    wait_finished(first)
    before = json.loads(cli("report", str(first), "--format", "json").stdout)
    recomputed_before = json.loads(cli("report", str(first), "--format", "json", "--recompute").stdout)
    assert json.loads((first / "metrics.json").read_text()) == {"train/loss": {"1": 1.5}}
    assert (first / "evidence/01-train/tb/events.out.tfevents.1.host").read_text() == "loss 1.5"
    assert read_state(first)["steps"][0]["evidence"]
    second = start_run(
        RunSpec(framework="demo", runs_dir=str(runs_dir)), plan={"steps": [_metrics_step(repo, "nan")]}
    )
    wait_finished(second)
    assert "NaN" in json.dumps(json.loads(cli("report", str(second), "--format", "json").stdout))
    after = json.loads(cli("report", str(first), "--format", "json").stdout)
    recomputed = json.loads(cli("report", str(first), "--format", "json", "--recompute").stdout)
    assert after == before and recomputed == recomputed_before
    assert "NaN" not in json.dumps(after) and "NaN" not in json.dumps(recomputed)
    assert (first / "evidence/01-train/metrics.json").read_text() == json.dumps({"train/loss": {"1": 1.5}})
    # the verdict was computed once: state.json, triage.json and the report agree
    assert (
        read_state(first)["verdict"]
        == json.loads((first / "triage.json").read_text())["verdict"]
        == after["result"]
    )


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "check",
    [
        "((10**1000)**1000)**1000 > 1",
        "round(1, -10**9) == 0",
        "-" * 1500 + "1 < 2",
        "(" * 5000 + "1" + ")" * 5000 + " < 2",
        "(2**4000)*(2**4000)*(2**4000)*(2**4000) > 1",
    ],
)
def test_metric_check_bombs_are_refused(tmp_path: Path, check: str) -> None:
    metrics = tmp_path / "m.json"
    metrics.write_text('{"a": {"1": 1.0}}')
    proc = subprocess.run(
        [PY, "-m", "console.monitor.check_metrics", str(metrics), check],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "REFUSED" in proc.stdout
    _no_traceback(proc)


def test_bad_runs_folder_and_replay_input_leave_nothing(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    for args in (
        ["run", "--framework", "demo", "--no-doctor", "--detach", "--runs-dir", str(afile)],
        ["run", "--framework", "demo", "--no-doctor", "--detach", "--runs-dir", str(afile / "sub")],
        ["ls", "--runs-dir", str(afile)],
    ):
        proc = cli(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        _no_traceback(proc)
    runs = tmp_path / "runs"
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    binary = tmp_path / "bin.log"
    binary.write_bytes(bytes(range(256)) * 40)
    for log in (empty, binary):
        proc = cli("replay", str(log), "--runs-dir", str(runs), "--detach")
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    proc = cli(
        "run",
        "--framework",
        "demo",
        "--launcher",
        "slurm",
        "--nodes",
        "-3",
        "--no-doctor",
        "--detach",
        "--runs-dir",
        str(runs),
    )
    assert proc.returncode == 2, proc.stderr
    assert not runs.exists() or list(runs.iterdir()) == []


def test_read_only_runs_folder(tmp_path: Path) -> None:
    mnt = tmp_path / "ro"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {proc.stderr.strip()}")
    try:
        run = cli("run", "--framework", "demo", "--no-doctor", "--detach", "--runs-dir", str(mnt))
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
        _no_traceback(run)
        doctor = cli("doctor", "--framework", "demo", "--runs-dir", str(mnt), "--json")
        checks = {c["id"]: c for c in json.loads(doctor.stdout)["checks"]}
        assert checks["disk_space"]["status"] == "block"
        assert "cannot be written" in checks["disk_space"]["advice"]
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


# --------------------------------------------------------------------------- Ctrl-C detaches
def test_ctrl_c_on_an_attached_run_detaches_with_its_own_exit_code(tmp_path: Path) -> None:
    from console import exitcodes

    runs = tmp_path / "runs"
    log = tmp_path / "rec.log"
    log.write_text("".join(f"line {i}\n" for i in range(400)))
    env = dict(os.environ)
    con = subprocess.Popen(
        [PY, "-m", "console", "replay", str(log), "--speed", "0.2", "--headless", "--runs-dir", str(runs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        preexec_fn=takes_ctrl_c,
    )
    try:
        wait_for(lambda: bool(RunStore(runs).run_dirs()), timeout=90, what="the run folder")
        run_dir = RunStore(runs).run_dirs()[0]
        wait_for(
            lambda: (
                (run_dir / "logs/01-replay.log").exists()
                and b"line 1" in (run_dir / "logs/01-replay.log").read_bytes()
            ),
            timeout=90,
            what="output",
        )
        con.send_signal(signal.SIGINT)
        _out, err = con.communicate(timeout=30)
        assert con.returncode == exitcodes.DETACHED != exitcodes.CANCELLED, err
        assert "detached" in err and "Traceback" not in err
        assert read_state(run_dir)["status"] == "running"  # the run goes on
        assert cancel_run(run_dir, grace=1.0)
    finally:
        if con.poll() is None:
            con.kill()
        reap_runs(runs)
    assert sys.platform.startswith("linux")


def test_a_cancelled_run_records_one_verdict(runs_dir: Path) -> None:
    plan = {"steps": [step("slow", "import time; time.sleep(30)"), step("next", "print(1)")]}
    run_dir = start_run(RunSpec(runs_dir=str(runs_dir)), plan=plan)
    wait_for(lambda: read_state(run_dir)["steps"][0]["status"] == "running", what="the step to start")
    assert cancel_run(run_dir, grace=1.0)
    state = read_state(run_dir)
    triage = json.loads((run_dir / "triage.json").read_text())
    assert state["verdict"] == triage["verdict"] == "Cancelled"
    assert [s["status"] for s in state["steps"]] == ["cancelled", "skipped"]
    report = json.loads(cli("report", str(run_dir), "--format", "json").stdout)
    assert report["result"] == "Cancelled"
    assert json.loads((run_dir / "report.json").read_text())["result"] == "Cancelled"
