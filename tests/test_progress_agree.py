"""The live progress parsers and triage read progress from the same data and agree on it; one Ray
line prefix for the tailer, the progress parsers and triage."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from console.catalog import CatalogError
from console.catalog.progress import PROGRESS_TOML, load_progress_patterns, progress_patterns
from console.monitor.progress import make_parser
from console.monitor.progress_base import strip_prefixes
from console.monitor.text import clean_segments, split_cr_segments
from console.triage.engine import split_prefix
from console.triage.rules import CATALOG, default_catalog
from console.triage.scan import scan_paths

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "triage"
SAMPLES = ROOT / "console" / "demo" / "samples"
PROGRESS_LITERALS = (b"= Step ", b"Training Progress", b"step:", b"Max number of steps", b"Final validation")


def progress_logs() -> list[Path]:
    logs = (
        sorted(FIXTURES.glob("*.log")) + sorted(FIXTURES.glob("real/*.log")) + sorted(SAMPLES.glob("*.log"))
    )
    return [p for p in logs if any(lit in p.read_bytes() for lit in PROGRESS_LITERALS)]


def live_view(path: Path, framework: str) -> dict[str, Any]:
    """What the console shows live: the last step and total of the progress events, and completion."""
    parser = make_parser(framework)
    step = total = None
    complete = False
    for raw in path.read_bytes().split(b"\n"):
        for text in clean_segments(raw):
            for ev in parser.feed(text, now=0.0):
                if ev.type == "progress":
                    step = ev.data["step"] if step is None else max(step, ev.data["step"])
                    total = ev.data.get("total") or total
                complete = complete or ev.type == "complete"
    return {"step": step, "total": total, "complete": complete}


def test_fixture_set_holds_both_frameworks() -> None:
    names = {p.name for p in progress_logs()}
    assert {"nemo_pass.log", "verl_pass.log", "nan_verl.log", "incomplete.log"} <= names
    assert len(names) >= 20


@pytest.mark.parametrize("path", progress_logs(), ids=lambda p: p.name)
def test_live_parser_and_triage_agree_on_step_total_and_completion(path: Path) -> None:
    engine = scan_paths([path])
    framework = engine.framework if engine.framework in ("nemo-rl", "verl", "demo") else "unknown"
    triage = {"step": engine.step, "total": engine.total, "complete": engine.completed_line is not None}
    assert live_view(path, framework) == triage


BANNER = "========================= Step {}/{} ========================="
# Lines where a hand-written parser and a marker regex would easily part ways (from the log formats
# of reference/notes-nemo-rl.md and notes-verl.md), with what both must say.
EDGE_LOGS = {
    "nemo_timeout_ending": (
        "nemo-rl",
        [
            BANNER.format(1, 3),
            "  • Total step time: 2.0s",
            "Timeout has been reached, stopping training early",
        ],
        {"step": 1, "total": 3, "complete": True},
    ),
    "nemo_async_ending": (
        "nemo-rl",
        ["(pid=7) " + BANNER.format(2, 2), "Async GRPO training complete!"],
        {"step": 2, "total": 2, "complete": True},
    ),
    "verl_validation_only": (
        "verl",
        ["(TaskRunner pid=1) step:0 - val-core/acc/mean@1:np.float64(0.5)"],
        {"step": None, "total": None, "complete": False},
    ),
    "verl_final_validation_without_total": (
        "verl",
        [
            "(TaskRunner pid=1) step:1 - actor/pg_loss:np.float64(0.1)",
            "(TaskRunner pid=1) Final validation metrics: {}",
        ],
        {"step": 1, "total": None, "complete": True},
    ),
    "verl_bar_without_stats_then_step_after_bracket": (
        "verl",
        ["Training Progress:  50%|█████     | 1/2", "[x] step:2 - actor/lr:1e-06", "step:3"],
        {"step": 3, "total": 2, "complete": True},
    ),
    "verl_total_then_last_step": (
        "verl",
        ["Total training steps: 2", "(TaskRunner pid=1)step:1 - a:1", "(TaskRunner pid=1) step:2 - a:2"],
        {"step": 2, "total": 2, "complete": True},
    ),
}


@pytest.mark.parametrize("name", sorted(EDGE_LOGS))
def test_edge_lines_agree(name: str, tmp_path: Path) -> None:
    framework, lines, want = EDGE_LOGS[name]
    log = tmp_path / f"{name}.log"
    log.write_text("\n".join(lines) + "\n")
    engine = scan_paths([log], framework=framework)
    assert {"step": engine.step, "total": engine.total, "complete": engine.completed_line is not None} == want
    assert live_view(log, framework) == want


def test_the_agreement_is_not_vacuous() -> None:
    views = {p.name: live_view(p, "verl" if "verl" in p.name else "nemo-rl") for p in progress_logs()}
    assert views["nemo_pass.log"]["complete"] and views["verl_pass.log"]["complete"]
    assert views["nemo_pass.log"]["step"] and views["verl_pass.log"]["total"]
    assert not views["incomplete.log"]["complete"]


def test_progress_markers_come_from_progress_toml_only() -> None:
    markers = {m.id: m for m in default_catalog().markers}
    for p in progress_patterns():
        m = markers[p.id]
        assert (m.kind, m.literals, m.regex.pattern, m.min_step) == (
            p.kind,
            p.literals,
            p.regex.pattern,
            p.min_step,
        )
    own = tomllib.loads(CATALOG.read_text())["marker"]
    assert not [m["id"] for m in own if m["kind"] in ("progress", "total", "complete")]


def test_progress_toml_is_validated(tmp_path: Path) -> None:
    text = PROGRESS_TOML.read_text()
    bad = tmp_path / "progress.toml"
    bad.write_text(text.replace("(?P<step>\\d+)/(?P<total>\\d+) =+", "(\\d+)/(\\d+) =+", 1))
    with pytest.raises(CatalogError, match="needs a \\(\\?P<step>"):
        load_progress_patterns(bad)
    bad.write_text(
        text
        + '\n[[pattern]]\nid = "x"\nframework = "verl"\nkind = "complete"\nliterals = ["x"]\nregex = "x"\ncolour = 1\n'
    )
    with pytest.raises(CatalogError, match=r"progress\.toml: pattern\[\d+\]\.colour: unknown key"):
        load_progress_patterns(bad)


@pytest.mark.parametrize(
    "prefix",
    [
        "(pid=12)",
        "(pid=12, ip=10.0.0.1)",
        "(TaskRunner pid=12)",
        "(MegatronPolicyWorker[rank=0] pid=3, ip=10.0.0.1)",
        "(raylet)",
        "(gcs_server, ip=10.0.0.1)",
    ],
)
def test_one_ray_prefix_for_tailer_progress_and_triage(prefix: str) -> None:
    body = "========================= Step 3/5 ========================="
    assert strip_prefixes(f"{prefix} {body}") == body
    assert split_prefix(f"{prefix} {body}") == (prefix, body)
    assert split_cr_segments(f"{prefix} \rhello\r") == [f"{prefix} hello"]
    assert split_prefix(f"(not a prefix) {body}")[0] == ""
