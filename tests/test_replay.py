"""``rl-console replay``: a recorded log re-emitted as a live run, at its recorded pace."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from runs_support import cli, reap_runs

from console.runs.replay import emit, line_time, pacing

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def runs_dir(tmp_path: Path):
    d = tmp_path / "runs"
    yield d
    assert reap_runs(d) == []


def test_timestamps_are_recognised() -> None:
    assert line_time("2026-11-21 22:36:01,500 INFO x") - line_time("2026-11-21 22:36:00,000 INFO y") == 1.5
    assert line_time("[2026-11-21T22:36:00.25Z] x") is not None
    assert line_time("22:36:02 step") - line_time("22:36:00 step") == 2.0
    assert line_time("Step 3/30") is None and line_time("99:99:99 no") is None


def test_pacing_follows_timestamps_or_a_steady_rate() -> None:
    stamped = [b"10:00:00 a\n", b"10:00:01 b\n", b"no stamp\n", b"10:00:03 c\n", b"10:01:00 d\n"]
    assert pacing(stamped, speed=2.0) == [0.0, 0.5, 0.0, 1.0, 2.5]  # gaps capped at 5 s, then / speed
    plain = [b"a\n", b"b\n", b"c\n"]
    delays = pacing(plain, speed=1.0)
    assert delays[0] == 0.0 and delays[1] == delays[2] > 0


def test_emit_reproduces_bytes_and_pace(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    data = b"10:00:00 first\n10:00:01 \xff bytes\r\n10:00:02 last-no-newline"
    log.write_bytes(data)
    out = io.BytesIO()
    t0 = time.monotonic()
    emit(log, speed=4.0, out=out)
    assert out.getvalue() == data
    assert time.monotonic() - t0 >= 0.45  # two 1 s gaps at speed 4


def test_replay_of_a_recorded_nemo_rl_failure_is_a_run_the_console_follows(
    runs_dir: Path, tmp_path: Path
) -> None:
    lines = ["Loaded configuration from: examples/configs/grpo_math_1B_megatron.yaml"]
    for s in (1, 2):
        lines += [
            f"========================= Step {s}/2 =========================",
            "▶ Preparing batch...",
            "",
            "📊 Training Results:",
            "  • Loss: nan",
            "  • Avg Reward: 0.1000",
        ]
    log = tmp_path / "recorded.log"
    log.write_text("\n".join(lines) + "\n")
    res = cli(
        "replay",
        str(log),
        "--speed",
        "20",
        "--framework",
        "nemo-rl",
        "--runs-dir",
        str(runs_dir),
        "--headless",
    )
    replayed = [ln[len("replay | ") :] for ln in res.stdout.splitlines() if ln.startswith("replay | ")]
    assert replayed == lines
    assert "[step 2/2" in res.stdout and "] replay" in res.stdout
    assert res.returncode == 1 and "Verdict: Fail" in res.stdout and "metric_failure" in res.stdout
    (run_dir,) = list(runs_dir.iterdir())
    assert "-nemo-rl-l0-replay" in run_dir.name
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["extra"]["replay_of"] == str(log.resolve())
