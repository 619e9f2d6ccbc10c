"""Post-mortem stall detection (console/triage/stall.py, phases in console/catalog/stall.toml) and a user
cancel that beats the Ray errors it causes, on real excerpts.

The excerpts are the tuning split's cases of ``tests/corpus/*.jsonl`` (read by id, cut as posted) and the
fixtures of ``fixtures/triage/stall/`` (``sources.json`` names each source thread).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.triage.engine import TriageEngine
from console.triage.scan import scan_paths, triage_files
from console.triage.stall import catalog, read_tail, stalled
from console.triage.verdict import _triage_step

sys.path.insert(0, str(Path(__file__).parent))
from triage_helpers import primary  # noqa: E402

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).parent
STALL = HERE / "fixtures" / "triage" / "stall"
SOURCES = json.loads((STALL / "sources.json").read_text())


def _corpus(split: str | None) -> dict[str, str]:
    out = {}
    for path in sorted((HERE / "corpus").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line) if line.strip() else None
            if case and split in (None, case.get("split")):
                out[case["id"]] = case["log_excerpt"]
    return out


TUNING = _corpus("tuning")


def _log(tmp_path: Path, case_id: str, extra: str = "") -> Path:
    assert case_id in TUNING, f"{case_id} is not a tuning case"
    path = tmp_path / f"{case_id}.log"
    path.write_text(TUNING[case_id] + "\n" + extra)
    return path


# ---------------------------------------------------------------------------------- each phase kind

PHASES = [
    ("hang-megatron-stuck-after-nccl-ring-setup", "nccl_init"),  # ring setup lines, no Init COMPLETE
    ("e-vllm-two-node-tp8-pp2-hangs-after-nccl-trees", "nccl_init"),  # Init START, then channels
    ("e-ray-megatron-actor-stuck-second-iteration-after-nccl-init", "nccl_init"),  # Ray actor prefix
    ("hang-verl-stuck-at-training-progress-zero", "progress_bar"),  # Training Progress 0/125
    ("hang-verl-no-errors-training-never-starts-after-worker-init", "training_start"),
    ("e-vllm-serve-tp4-hangs-at-model-weights-format", "server_startup"),
    ("hang-vllm-full-cudagraph-1024-requests-stuck", "engine_no_throughput"),
    ("hang-verl-rollout-hang-gpu-util-zero", "gpu_idle_snapshot"),  # nvidia-smi: memory held, 0% util
    ("l-onlinerlhf-deepspeed-init-distributed-hang", "distributed_init"),  # DeepSpeed comm init records
    (
        "pd-llamafactory-multinode-stuck-after-load-dataset",
        "distributed_init",
    ),  # torch's first-barrier warning
    ("pb-neox-mp2-hang-after-pr958", "training_start"),  # "training ..." under a launcher's host tag
    ("pb-nemorl-stops-after-long-ckpt", "checkpoint_save"),  # Megatron's save line, no "successfully saved"
    (
        "qb-vllm-mnnvl-allreduce-init-shm-broadcast-wait",
        "engine_broadcast_wait",
    ),  # vLLM's minute-by-minute wait
]


@pytest.mark.parametrize(("case_id", "phase"), PHASES)
def test_a_finished_log_that_ends_inside_a_phase_is_a_hang(tmp_path: Path, case_id: str, phase: str) -> None:
    res = triage_files([_log(tmp_path, case_id)])
    p = res["primary"] or {}
    assert primary(res) == ("Fail", "hang", f"stall:{phase}"), p
    assert p["confidence"] <= 0.55  # moderate: below a traceback finding
    assert "cut while the run was still going" in p["evidence"]  # the other reading is said
    assert p["line"] in p["lines"] and max(p["lines"]) == p["line"]


def test_health_and_metrics_polls_after_the_phase_say_nothing(tmp_path: Path) -> None:
    poll = '(APIServer pid=2019320) INFO:     127.0.0.1:39830 - "GET /metrics HTTP/1.1" 200 OK\n'
    res = triage_files([_log(tmp_path, "hang-vllm-full-cudagraph-1024-requests-stuck", poll * 3)])
    assert primary(res) == ("Fail", "hang", "stall:engine_no_throughput")


@pytest.mark.parametrize("name", [n for n, m in SOURCES.items() if m["phase"]])
def test_stall_fixtures_from_other_threads(name: str) -> None:
    res = triage_files([STALL / f"{name}.log"])
    phase = SOURCES[name]["phase"]
    assert primary(res) == ("Fail", "hang", f"stall:{phase}"), res["primary"]
    assert res["primary"]["advice"] == next(
        p.advice for p in catalog()[3] if p.id == phase
    )  # the phase's own


@pytest.mark.parametrize("name", [n for n, m in SOURCES.items() if not m["phase"]])
def test_fixtures_whose_phase_finished_or_process_exited_are_no_hang(name: str) -> None:
    assert triage_files([STALL / f"{name}.log"])["primary"] is None


def test_every_phase_fires_in_two_documents() -> None:
    """No phase is fitted to one log: each is found in at least two documents (corpus cases of either
    split, as test_triage_corpus_own counts rules, and the fixtures)."""
    docs = [*_corpus(None).values(), *(p.read_text() for p in STALL.glob("*.log"))]
    seen: dict[str, int] = {}
    for text in docs:
        data = (text + "\n").encode()
        hit = stalled(read_tail(io.BytesIO(data), data.count(b"\n")))
        if hit:
            seen[hit[0].id] = seen.get(hit[0].id, 0) + 1
    assert {p.id for p in catalog()[3]} == {k for k, n in seen.items() if n >= 2}, seen


# ---------------------------------------------------------------------------------- counter-cases


def test_a_completion_or_done_marker_after_the_phase_is_no_hang(tmp_path: Path) -> None:
    # the same NCCL excerpt, then the communicator's Init COMPLETE and lazily connected channels
    done = (STALL / "nccl_init_complete_lines.log").read_text()
    lazy = "VM-160-69-tencentos:561:561 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[1] via P2P/IPC\n"
    res = triage_files([_log(tmp_path, "e-vllm-two-node-tp8-pp2-hangs-after-nccl-trees", done + lazy)])
    assert res["verdict"] == "Incomplete" and res["primary"] is None
    # a bar at 0 that then moves, then the run's completion marker: Pass
    bar = "Training Progress:   1%|          | 1/125 [05:45<?, ?it/s]\n"
    end = "Training Progress: 100%|##########| 125/125 [9:04:45<00:00, 261.3s/it]\n"
    res = triage_files([_log(tmp_path, "hang-verl-stuck-at-training-progress-zero", bar + end)])
    assert res["verdict"] == "Pass"
    assert triage_files([STALL / "nccl_init_complete_lines.log"])["primary"] is None
    # a checkpoint save that finished, then training went on
    saved = "(MegatronPolicyWorker[rank=0] pid=1750241) successfully saved checkpoint from iteration       0 to /ckpt\n"
    res = triage_files([_log(tmp_path, "pb-nemorl-stops-after-long-ckpt", saved)])
    assert res["primary"] is None
    # the first barrier's warning, then the ranks go on to train
    steps = "".join(f"{{'loss': 2.{i}, 'learning_rate': 1e-05, 'epoch': 0.0{i}}}\n" for i in range(4))
    res = triage_files([_log(tmp_path, "pd-llamafactory-multinode-stuck-after-load-dataset", steps)])
    assert res["primary"] is None
    # the engine waited through a slow compile, then served
    served = (
        "(EngineCore pid=2025) INFO 08-13 11:32:10 [loggers.py:123] Avg prompt throughput: 12.0 tokens/s\n"
    )
    res = triage_files([_log(tmp_path, "qb-vllm-mnnvl-allreduce-init-shm-broadcast-wait", served)])
    assert res["primary"] is None


@pytest.mark.parametrize(
    "case_id",
    [
        "pass-transformers-t5-11b-deepspeed-success-initial-overflow",  # a bar that moves: 6, 7, 8/1184
        "pass-trl-grpo-vllm-sleep-negative-loss-progress",  # one redraw at 3/1562
        "pass-vllm-graph-capture-progress-bar-pr-log",  # "Graph capturing finished"
        "g-pass-vllm-rolmocr-flashinfer-fallback-model-loads",  # cut right after "Model loading took"
        "pass-verl-gsm8k-step0-val-step1-metrics",  # training started: step:1
        "pass-ray-raylet-cut-broken-pipe-noise",  # no phase at all
    ],
)
def test_a_passing_runs_tail_is_no_hang(tmp_path: Path, case_id: str) -> None:
    res = triage_files([_log(tmp_path, case_id)])
    assert res["verdict"] in ("Pass", "Incomplete") and res["primary"] is None, res["primary"]


def test_a_process_that_was_terminated_or_exited_did_not_stall(tmp_path: Path) -> None:
    # vLLM workers "WorkerProc was terminated" after a bar at 2/7: stopped, not stalled
    res = triage_files([_log(tmp_path, "cancel-vllm-serve-ctrlc-during-weight-load")])
    assert res["verdict"] != "Fail", res["primary"]
    # a bar at 0/7, then the shell prompt: the process exited
    assert triage_files([STALL / "chatglm3_bar_at_zero_then_shell_prompt.log"])["primary"] is None


def test_a_log_still_being_written_is_never_called_a_hang(tmp_path: Path) -> None:
    log = _log(tmp_path, "e-vllm-two-node-tp8-pp2-hangs-after-nccl-trees")
    assert triage_files([log])["primary"]["class"] == "hang"  # the finished log
    # the live path: the supervisor's engine fed line by line, its result at any time
    live = TriageEngine("unknown")
    for n, line in enumerate(log.read_text().splitlines(), 1):
        live.feed(n, line)
    assert live.result()["verdict"] == "Incomplete" and live.result(None)["primary"] is None
    # the run folder's verdict for a step still running (no exit code yet) and the non-final scan
    assert _triage_step(log, "unknown", None)[0]["primary"] is None
    assert scan_paths([log]).result()["primary"] is None


def test_exit_code_decides_with_the_stall(tmp_path: Path) -> None:
    log = _log(tmp_path, "hang-megatron-stuck-after-nccl-ring-setup")
    assert _triage_step(log, "unknown", 0)[0]["verdict"] != "Fail"  # exited 0: it did not hang
    res = _triage_step(log, "unknown", 137)[0]  # killed in the phase (a timeout, scancel -9)
    assert primary(res) == ("Fail", "hang", "stall:nccl_init")
    assert [a["class"] for a in res["alternatives"]] == ["unknown_error"]


def test_a_failure_in_the_log_wins_over_the_stall(tmp_path: Path) -> None:
    crash = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    log = _log(tmp_path, "hang-megatron-stuck-after-nccl-ring-setup")
    log.write_text(crash + log.read_text())
    assert triage_files([log])["primary"]["class"] != "hang"


# ---------------------------------------------------------------------------------- cancel beats Ray


@pytest.mark.parametrize(
    "case_id",
    ["cancel-ray-tune-ctrl-c-raylet-connection-closed", "cancel-ray-ctrl-c-ray-get-actor-keeps-printing"],
)
def test_a_user_interrupt_beats_the_ray_errors_it_causes(tmp_path: Path, case_id: str) -> None:
    res = triage_files([_log(tmp_path, case_id)])
    assert res["verdict"] == "Cancelled" and res["primary"]["class"] == "cancelled", res["primary"]


def test_keyboard_interrupt_then_raylet_check_failed_is_cancelled(tmp_path: Path) -> None:
    # the interrupted ray.get (tuning: cancel-ray-ctrl-c-...) followed by the driver's raylet
    # "Check failed ... Raylet connection closed" abort (tuning: e-ray-ctrl-c-interactive-...)
    interrupted = TUNING["cancel-ray-ctrl-c-ray-get-actor-keeps-printing"].split(">>> (Actor")[0]
    raylet = "\n".join(TUNING["e-ray-ctrl-c-interactive-raylet-connection-closed"].splitlines()[2:9])
    path = tmp_path / "x.log"
    path.write_text(interrupted + raylet + "\n")
    res = triage_files([path])
    assert res["verdict"] == "Cancelled", res["primary"]
    assert "ray_cluster" in [a["class"] for a in res.get("alternatives") or []]
    path.write_text(raylet + "\n")  # the same Ray abort with no interrupt before it is not a cancel
    assert triage_files([path])["verdict"] != "Cancelled"


def test_a_log_read_from_a_pipe_is_triaged_without_its_tail(tmp_path: Path) -> None:
    text = TUNING["hang-megatron-stuck-after-nccl-ring-setup"] + "\n"
    p = subprocess.run(
        [sys.executable, "-m", "console", "triage", "--json", "/dev/stdin"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 1 and json.loads(p.stdout)["verdict"] == "Incomplete", p.stderr  # not 2


def test_the_run_verdict_calls_a_stall_only_for_a_step_that_ended(tmp_path: Path) -> None:
    from test_report import NEMO_LOGS, make_run, nemo_steps

    from console.triage.verdict import run_verdict

    logs = dict(NEMO_LOGS, **{"l0-grpo-megatron": TUNING["hang-megatron-stuck-after-nccl-ring-setup"] + "\n"})
    killed = make_run(
        tmp_path / "killed",
        "nemo-rl",
        nemo_steps(),
        logs,
        statuses={"l0-grpo-megatron": ("failed", 137)},
        run_status="failed",
    )
    v = run_verdict(killed)
    assert v["verdict"] == "Fail" and v["primary"]["rule"] == "stall:nccl_init", v["primary"]
    running = make_run(
        tmp_path / "running",
        "nemo-rl",
        nemo_steps(),
        logs,
        statuses={"l0-grpo-megatron": ("running", None)},
        run_status="running",
    )
    v = run_verdict(running)
    assert v["primary"] is None and v["steps"]["l0-grpo-megatron"]["verdict"] == "Incomplete", v["primary"]
