"""The console's Textual-free parts: run folder reading, bounded log following, themes, settings."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tui_helpers import write_run  # noqa: E402

from console.errors import RunNotFound  # noqa: E402
from console.runs.store import RunStore  # noqa: E402
from console.tui.config import config_path, load_config, save_config  # noqa: E402
from console.tui.logfollow import LogFollower  # noqa: E402
from console.tui.rundata import RunModel, list_runs  # noqa: E402
from console.tui.themes import load_themes, resolve_theme_name, themes_dir  # noqa: E402


def test_list_and_resolve_runs(tmp_path: Path) -> None:
    write_run(tmp_path, "20261121-223600-demo-l0", created=100.0)
    write_run(tmp_path, "20261121-223700-demo-l0-nan", status="failed", verdict="Fail", created=200.0)
    (tmp_path / "not-a-run").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "state.json").write_text("{half")
    rows = list_runs(tmp_path)
    assert [r.id for r in rows] == ["20261121-223700-demo-l0-nan", "20261121-223600-demo-l0"]
    assert rows[0].progress_text() == "1/1 · it 20/20"
    assert RunStore(tmp_path).resolve("20261121-2236").name == "20261121-223600-demo-l0"
    with pytest.raises(RunNotFound, match="ambiguous"):
        RunStore(tmp_path).resolve("20261121-22")
    with pytest.raises(RunNotFound, match="no run"):
        RunStore(tmp_path).resolve("zzz")


def test_run_model_reads_events_incrementally(tmp_path: Path) -> None:
    run = write_run(tmp_path, failing=True, status="failed", verdict="Fail")
    model = RunModel(run)
    snap = model.refresh()
    assert snap.progress["demo-grpo"]["step"] == 20
    assert snap.metrics["loss"][-1] == (20, 1 / 20)
    assert snap.findings[0]["class"] == "cuda_oom"
    assert snap.triage["primary"]["remedy"]["overrides"] == ["policy.train_micro_batch_size=1"]
    with open(run / "events.jsonl", "a") as fh:
        fh.write(
            json.dumps({"t": 1, "type": "gpu", "step": None, "devices": [{"index": 0, "mem_used": 1}]}) + "\n"
        )
        fh.write('{"t": 2, "type": "host", "cpu": 5')  # a writer mid-append: left for later
    snap = model.refresh()
    assert snap.gpu == ({"index": 0, "mem_used": 1},) and snap.host == {}
    (run / "metrics.json").write_text(json.dumps({"train/reward": {"1": 0.5, "2": 0.75}}))
    assert model.refresh().metrics["train/reward"] == ((1, 0.5), (2, 0.75))


def test_snapshot_is_frozen_and_not_the_workers_live_data(tmp_path: Path) -> None:
    """The monitor's worker refreshes while the UI thread still reads the snapshot it posted before:
    that snapshot must not be the worker's own dicts and lists (iterating one the worker grows
    raises "dictionary changed size during iteration")."""
    run = write_run(tmp_path, status="running", verdict=None, failing=True)
    model = RunModel(run)
    posted = model.refresh()
    names = iter(posted.metrics)  # the UI thread is half-way through the metric names...
    next(names)
    events = [
        {"t": 1, "type": "metrics", "step": 21, "values": {f"new_{i}": 1.0 for i in range(50)}},
        {"t": 2, "type": "finding", "step": "demo-grpo", "class": "nan_loss", "verdict": "Fail"},
        {"t": 3, "type": "progress", "step": 21, "total": 20},
        {"t": 4, "type": "gpu", "node": "n1", "devices": []},
        {"t": 5, "type": "phase", "name": "eval"},
    ]
    with open(run / "events.jsonl", "a") as fh:
        fh.write("".join(json.dumps(ev) + "\n" for ev in events))
    fresh = model.refresh()  # ...when the worker reads on
    assert list(names) == ["reward"]  # no RuntimeError, and the names it had
    assert fresh is not posted
    assert sorted(posted.metrics) == ["loss", "reward"] and "new_0" in fresh.metrics
    assert len(posted.findings) == 1 and len(fresh.findings) == 2
    assert posted.progress["demo-grpo"]["step"] == 20 and fresh.progress["demo-grpo"]["step"] == 21
    assert dict(posted.gpu_nodes) == {} and posted.phase is None and fresh.phase == "eval"
    for mapping in (
        posted.state,
        posted.metrics,
        posted.progress,
        posted.host,
        posted.gpu_nodes,
        posted.triage,
    ):
        with pytest.raises(TypeError):
            mapping["x"] = 1  # type: ignore[index]
    assert isinstance(posted.metrics["loss"], tuple) and isinstance(posted.findings, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        posted.phase = "x"  # type: ignore[misc]


def test_follower_bounded_tail_truncation_rotation_and_giant_lines(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(b"".join(b"old %d\n" % i for i in range(10_000)))
    fol = LogFollower(log, initial_tail=1000, max_line=50)
    first = fol.poll()
    assert first[-1] == "old 9999" and len(first) < 200 and fol.skipped_bytes > 0
    assert not first[0].startswith("ld ")  # starts on a line boundary
    with open(log, "ab") as fh:
        fh.write(b"\x1b[31mred\x1b[0m\nbar 10%\rbar 100%\npartial")
    assert fol.poll() == ["red", "bar 100%"]
    with open(log, "ab") as fh:
        fh.write(b" end\n" + b"x" * 500 + b"\n")
    assert fol.poll() == ["partial end", "x" * 50]
    log.write_bytes(b"after truncate\n")
    assert fol.poll() == ["after truncate"] and fol.resets == 1
    os.rename(log, tmp_path / "run.log.1")
    log.write_bytes(b"rotated\n")
    assert fol.poll() == ["rotated"] and fol.resets == 2


def test_themes_load_and_fallback(tmp_path: Path) -> None:
    loaded = load_themes()
    assert [t.name for t in loaded.themes] == ["dark", "light", "high-contrast"]
    assert loaded.notice is None and themes_dir().name == "theme_files"
    missing = load_themes(tmp_path / "nope")
    assert not missing.themes and "not found" in (missing.notice or "")
    (tmp_path / "bad.toml").write_text("name = [")
    (tmp_path / "ok.toml").write_text('name = "ok"\nprimary = "#112233"\n')
    mixed = load_themes(tmp_path)
    assert [t.name for t in mixed.themes] == ["ok"] and "bad.toml" in (mixed.notice or "")
    assert resolve_theme_name("high-contrast", ["textual-dark", "textual-ansi"]) == "textual-ansi"
    assert resolve_theme_name(None, ["dark"]) == "dark"


def test_settings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert load_config() == {}
    save_config(theme="light")
    save_config(other=1)
    assert config_path() == tmp_path / "rl-console" / "tui.json"
    assert load_config() == {"theme": "light", "other": 1}
    config_path().write_text("not json")
    assert load_config() == {}
