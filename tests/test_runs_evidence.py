"""Evidence copied at step end belongs to that step: a file left by an earlier run just before the
step started (same second, or a file system with coarse timestamps) is not taken as this step's."""

from __future__ import annotations

import json
import os
from pathlib import Path

from console.runs.finalize import collect_evidence, evidence_snapshot


def _step(repo: Path) -> dict:
    return {"name": "train", "cwd": str(repo), "metrics_json": "out/metrics.json", "tb_dir": "out/tb"}


def _write(repo: Path, who: str) -> None:
    (repo / "out/tb").mkdir(parents=True, exist_ok=True)
    (repo / "out/metrics.json").write_text(json.dumps({"run": {"1": who}}))
    (repo / "out/tb/events.out.tfevents.1.host").write_text(who)


def test_a_file_left_just_before_the_step_is_not_its_evidence(tmp_path: Path) -> None:
    repo, run = tmp_path / "repo", tmp_path / "run"
    run.mkdir()
    _write(repo, "earlier-run")  # written a moment before this step starts: same second
    before = evidence_snapshot(run, _step(repo))
    started = os.stat(repo / "out/metrics.json").st_mtime  # the step starts in the same instant
    assert collect_evidence(run, 0, _step(repo), since=started, before=before) == []
    assert not (run / "metrics.json").exists()


def test_a_file_the_step_rewrote_is_its_evidence(tmp_path: Path) -> None:
    repo, run = tmp_path / "repo", tmp_path / "run"
    run.mkdir()
    _write(repo, "earlier-run")
    before = evidence_snapshot(run, _step(repo))
    _write(repo, "this-run-with-a-longer-name")  # the step writes its own files
    copied = collect_evidence(run, 0, _step(repo), since=None, before=before)
    assert "metrics.json" in copied
    assert json.loads((run / "metrics.json").read_text())["run"]["1"] == "this-run-with-a-longer-name"
    assert (
        run / "evidence/01-train/tb/events.out.tfevents.1.host"
    ).read_text() == "this-run-with-a-longer-name"


def test_a_file_created_by_the_step_is_its_evidence(tmp_path: Path) -> None:
    repo, run = tmp_path / "repo", tmp_path / "run"
    run.mkdir()
    repo.mkdir()
    before = evidence_snapshot(run, _step(repo))
    assert before == {}
    _write(repo, "this-run")
    assert "metrics.json" in collect_evidence(run, 0, _step(repo), before=before)
