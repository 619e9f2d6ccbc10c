"""Progress parsers on NeMo-RL and verl output shapes (formats from reference/notes-*.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from console.errors import SpecError
from console.events import Event
from console.monitor.eta import EtaEstimator, StallDetector
from console.monitor.progress import make_parser
from console.monitor.progress_base import parse_number, strip_prefixes
from console.monitor.tailer import Tailer

pytestmark = pytest.mark.timeout(60)


def _feed(parser, lines: list[str], t0: float = 1000.0, dt: float = 10.0) -> list[Event]:
    out: list[Event] = []
    for i, line in enumerate(lines):
        out += parser.feed(line, now=t0 + i * dt)
    return out


def _of(events: list[Event], kind: str) -> list[dict]:
    return [e.data for e in events if e.type == kind]


NEMO_GRPO = [
    "========================= Epoch 1/1 =========================",
    "========================= Step 1/2 =========================",
    "▶ Preparing batch...",
    "▶ Generating responses for batch of size 8...",
    "▶ Processing rewards...,",
    "📊 Training Results:",
    "  • Loss: 0.1234",
    "  • Generation KL Error: 0.0012",
    "  • Avg Reward: 0.5000",
    "⏱️  Timing:",
    "  • Total step time: 12.50s",
    "  • generation: 5.00s (40.0%)",
    "========================= Step 2/2 =========================",
    "  • Loss: 0.1000",
    "  • Total step time: 11.50s",
    "Max number of steps has been reached, stopping training early",
    "🛑 Shutting down environment math...",
]


def test_nemo_rl_grpo_sync() -> None:
    ev = _feed(make_parser("nemo-rl"), NEMO_GRPO)
    prog = _of(ev, "progress")
    assert [(p["step"], p["total"]) for p in prog] == [(1, 2), (1, 2), (2, 2), (2, 2)]
    assert prog[0]["done"] == 0 and prog[-1]["done"] == 2
    assert prog[-1]["step_time_s"] == 12.0  # median of the reported step times
    assert prog[2]["eta_s"] == 12.5  # one step left when step 2 starts
    assert prog[0]["resumed_from"] is None
    mets = _of(ev, "metrics")
    assert mets[0] == {
        "step": 1,
        "values": {"loss": 0.1234, "gen_kl_error": 0.0012, "reward": 0.5, "step_time_s": 12.5},
        "source": "nemo-rl",
    }
    assert mets[1]["values"] == {"loss": 0.1, "step_time_s": 11.5}
    assert [p["name"] for p in _of(ev, "phase")] == [
        "Preparing batch",
        "Generating responses for batch of size 8",
        "Processing rewards",
    ]
    assert _of(ev, "complete")[0]["reason"] == "max_steps"


def test_nemo_rl_prefixes_timeout_and_async() -> None:
    lines = [
        "[mcore 1step] ========================= Step 1/2 =========================",
        "[mcore 1step] Timeout has been reached, stopping training early",
    ]
    ev = _feed(make_parser("nemo-rl"), lines)
    assert _of(ev, "progress")[0]["step"] == 1
    assert _of(ev, "complete")[0]["reason"] == "timeout"
    # async GRPO banner, Ray actor prefix, resumed run (first banner is step 3)
    lines = [
        "(MegatronPolicyWorker[rank=0] pid=12, ip=10.0.0.1) ========================= Step 3/5 =========================",
        "Async GRPO training complete!",
    ]
    ev = _feed(make_parser("demo"), lines)
    assert _of(ev, "progress")[0]["resumed_from"] == 2
    assert _of(ev, "progress")[0]["source"] == "demo"
    assert _of(ev, "complete")[0]["reason"] == "async_complete"
    assert strip_prefixes("[dtensor 2step] (TaskRunner pid=1) hello") == "hello"


VERL = [
    "+ python3 -m verl.trainer.main_ppo --config-path=config",
    "INFO:2026-08-22 10:00:00,123:Total training steps: 2",
    "(TaskRunner pid=10086) 'Initial validation metrics: {}'",
    "(TaskRunner pid=10086) step:0 - val-core/openai/gsm8k/acc/mean@1:np.float64(0.5)",
    "(TaskRunner pid=10086) Training Progress:   0%|          | 0/2 [00:00<?, ?it/s]",
    "(TaskRunner pid=10086) step:1 - actor/pg_loss:np.float64(0.0123) - actor/lr:3e-06 - "
    "training/global_step:1 - critic/vf_loss:nan - note:'text' - timing_s/step:np.float64(150.0)",
    "Training Progress:  50%|#####     | 1/2 [02:39<02:39, 159.11s/it]",
    "(TaskRunner pid=10086) step:2 - actor/pg_loss:np.float64(0.01) - training/global_step:np.int64(2)",
    "Training Progress: 100%|##########| 2/2 [05:18<00:00, 159.11s/it]",
    "(TaskRunner pid=10086) 'Final validation metrics: None'",
]


def test_verl_progress_metrics_completion() -> None:
    ev = _feed(make_parser("verl"), VERL)
    mets = _of(ev, "metrics")
    assert mets[0]["step"] == 0  # validation: reported, not a training step
    assert mets[1]["values"] == {
        "actor/pg_loss": 0.0123,
        "actor/lr": 3e-06,
        "training/global_step": 1.0,
        "critic/vf_loss": "nan",
        "timing_s/step": 150.0,
    }
    prog = _of(ev, "progress")
    assert all(p["step"] != 0 or p["total"] == 2 for p in prog)
    steps = [(p["step"], p["total"]) for p in prog]
    assert steps[-1] == (2, 2) and (1, 2) in steps
    bar = [p for p in prog if p["eta_s"] == 159.0]
    assert bar, prog  # the bar's remaining time is used as ETA
    comp = _of(ev, "complete")
    assert len(comp) == 1 and comp[0]["reason"] == "last step equals total"
    assert prog[-1]["resumed_from"] is None


@pytest.mark.parametrize(
    "resume_line",
    [
        "INFO:2026-08-22 10:00:00,123:Resuming from /ck/global_step_1, setting global step to 1",
        "(TaskRunner pid=3) Setting global step to 1",
    ],
)
def test_verl_resume_both_generations(resume_line: str) -> None:
    lines = [
        "Total training steps: 2",
        "Found checkpoint: %s /ck/global_step_1",
        resume_line,
        "Training Progress:  50%|#####     | 1/2 [00:00<?, ?it/s]",
        "step:2 - actor/pg_loss:np.float64(0.1)",
    ]
    ev = _feed(make_parser("verl"), lines)
    prog = _of(ev, "progress")
    assert all(p["resumed_from"] == 1 for p in prog if p["step"] >= 1)
    assert _of(ev, "complete")[0]["reason"] == "last step equals total"
    # resume detected from the first bar render alone (tqdm initial=global_steps)
    ev = _feed(make_parser("verl"), lines[3:])
    assert _of(ev, "progress")[0]["resumed_from"] == 1


def test_unknown_picks_framework() -> None:
    p = make_parser("unknown")
    ev = _feed(p, VERL)
    assert _of(ev, "complete") and p.source == "verl"
    p = make_parser("unknown")
    ev = _feed(p, NEMO_GRPO)
    assert _of(ev, "complete")[0]["reason"] == "max_steps" and p.source == "nemo-rl"
    with pytest.raises(SpecError):
        make_parser("bogus")


def test_parse_number_shapes() -> None:
    assert parse_number("np.float64(0.5)") == 0.5
    assert parse_number("np.int64(3)") == 3.0
    assert parse_number("-1.5e-3") == -0.0015
    assert parse_number("'x'") is None
    assert parse_number("np.float32(nan)") != parse_number("np.float32(nan)")  # nan


def test_verl_real_tqdm_through_tailer(tmp_path: Path) -> None:
    """A real tqdm bar named like verl's, interleaved with step lines, through the Tailer."""
    code = """
    import sys, time
    from tqdm import tqdm
    print("Total training steps: 3", flush=True)
    bar = tqdm(total=3, initial=0, desc="Training Progress", mininterval=0)
    for i in range(1, 4):
        time.sleep(0.02)
        print(f"step:{i} - actor/pg_loss:np.float64(0.{i}) - training/global_step:{i}", flush=True)
        bar.update(1)
    bar.close()
    """
    log = tmp_path / "verl.log"
    with open(log, "wb") as fh:
        subprocess.run([sys.executable, "-c", textwrap.dedent(code)], stdout=fh, stderr=fh, check=True)
    parser = make_parser("verl")
    ev: list[Event] = []
    for ln in Tailer(log).poll():
        ev += parser.feed(ln.text)
    assert [m["step"] for m in _of(ev, "metrics")] == [1, 2, 3]
    assert _of(ev, "progress")[-1]["step"] == 3
    assert len(_of(ev, "complete")) == 1


def test_eta_and_stall() -> None:
    e = EtaEstimator()
    assert e.eta_s(3) is None
    for s, t in [(1, 0.0), (2, 10.0), (3, 20.0)]:
        e.observe(s, t)
    assert e.step_time_s == 10.0 and e.eta_s(3) == 30.0
    d = StallDetector(60, now=0.0)
    assert d.check(30.0) is None
    hang = d.check(61.0)
    assert hang is not None and hang.type == "hang" and hang.data["idle_s"] == 61.0
    assert d.check(90.0) is None  # one event per stall
    d.observe([Event("progress", data={"step": 1})], now=100.0)
    assert d.check(150.0) is None
    assert d.check(161.0) is not None
    with pytest.raises(ValueError):
        StallDetector(0)


def test_event_roundtrip_keeps_plan_step_and_iteration() -> None:
    import json

    e = Event("progress", step="l0-grpo", data={"step": 3, "total": 5})
    back = Event.from_dict(json.loads(e.to_json()))
    assert back.step == "l0-grpo" and back.data == {"step": 3, "total": 5}
    assert json.loads(e.to_json())["step"] == 3  # readers of the JSON see the iteration number
    phase = Event.from_dict(json.loads(Event("phase", step="l0", data={"name": "x"}).to_json()))
    assert phase.step == "l0" and phase.data == {"name": "x"}
