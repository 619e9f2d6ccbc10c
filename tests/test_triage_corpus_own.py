"""The project's own corpus of real failure logs (``tests/corpus/*.jsonl``), scored per split, and the
rule that no triage rule is fitted to a single case.

Each corpus line: ``{"id", "source_url", "log_excerpt", "expected_class", "expected_verdict",
"split": "tuning"|"heldout"}``. Rules are written from the tuning split only. The issue's targets
(verdict >= 95%, class >= 90% on each split) are printed next to the measured scores; the assertion
is a regression floor per corpus file and split (``tests/corpus/floors.toml``: the scores measured
when the floors were last raised, minus 3 points) and no false Pass at all. ``RLC_TRIAGE_CORPUS``
(paths joined by ``:``) scores other files instead (e.g. a corpus still being built in another
checkout); files without a floor are held to false Pass == 0 only. Skipped when no corpus file is present.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path

import pytest

from console.triage.evaluate import Score, load_cases, score_cases, table
from console.triage.scan import triage_files

pytestmark = pytest.mark.timeout(300)

HERE = Path(__file__).parent
SHARED = HERE.parents[1].parent / "shared" / "triage-corpus" / "cases.jsonl"
FIXTURES = HERE / "fixtures" / "triage"
FLOORS = HERE / "corpus" / "floors.toml"
VERDICT_TARGET, CLASS_TARGET = 95.0, 90.0  # issue 12's targets: shown, not asserted (see floors.toml)


def corpus_files() -> list[Path]:
    env = os.environ.get("RLC_TRIAGE_CORPUS")
    if env:
        return [Path(p) for p in env.split(":") if p]
    return sorted((HERE / "corpus").glob("*.jsonl"))


def _cases() -> list[dict]:
    out: list[dict] = []
    for f in corpus_files():
        out += load_cases(f)
    return out


def floors() -> dict[str, dict[str, float]]:
    """``{"cases-a.tuning": {"verdict": 88.8, "class": 87.4}, ...}`` from tests/corpus/floors.toml."""
    data = tomllib.loads(FLOORS.read_text()) if FLOORS.is_file() else {}
    return {
        f"{stem}.{split}": {k: float(v) for k, v in vals.items()}
        for stem, splits in data.get("floor", {}).items()
        for split, vals in splits.items()
    }


def target_table(scores: list[Score], floor: dict[str, dict[str, float]]) -> str:
    rows = [
        f"{'corpus.split':<22} {'cases':>5} {'verdict%':>8} {'floor':>6} {'target':>6} "
        f"{'class%':>7} {'floor':>6} {'target':>6} {'falsePass':>9}"
    ]
    for s in scores:
        fl = floor.get(s.name, {})
        rows.append(
            f"{s.name:<22} {s.n:>5} {s.verdict_pct:>8.1f} {fl.get('verdict', float('nan')):>6.1f} "
            f"{VERDICT_TARGET:>6.1f} {s.class_pct:>7.1f} {fl.get('class', float('nan')):>6.1f} "
            f"{CLASS_TARGET:>6.1f} {s.false_pass:>9}"
        )
    return "\n".join(rows)


@pytest.mark.parametrize("split", ["tuning", "heldout"])
def test_corpus_split_scores(split: str) -> None:
    """Per corpus file: no false Pass, and verdict/class not below the recorded floor (a regression
    guard); the issue's targets are printed beside them (``pytest -s``) and tracked in the closing note."""
    scores = []
    for f in corpus_files():
        cases = [c for c in load_cases(f) if c.get("split") == split]
        if cases:
            score = score_cases(cases, by_split=False)["all"]
            score.name = f"{f.stem}.{split}"
            scores.append(score)
    if not scores:
        pytest.skip(f"no {split} cases in {[str(f) for f in corpus_files()] or 'tests/corpus/*.jsonl'}")
    floor = floors()
    report = target_table(scores, floor) + "\n\n" + table(scores)
    print(report)
    if not os.environ.get("RLC_TRIAGE_CORPUS"):  # the project's own files are all floored
        assert all(s.name in floor for s in scores), f"tests/corpus/floors.toml lacks a split\n{report}"
    for s in scores:
        assert s.false_pass == 0, report
        fl = floor.get(s.name)
        if fl is None:
            continue
        assert s.verdict_pct >= fl["verdict"], f"{s.name}: verdict below its floor\n{report}"
        assert s.class_pct >= fl["class"], f"{s.name}: class below its floor\n{report}"


def test_corpus_cases_are_well_formed() -> None:
    cases = _cases()
    if not cases:
        pytest.skip("no corpus file")
    ids = [c.get("id") for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    for c in cases:
        assert c.get("split") in ("tuning", "heldout"), c.get("id")
        assert str(c.get("source_url", "")).startswith("https://"), c.get("id")
        assert c.get("expected_class") and c.get("expected_verdict"), c.get("id")


def _documents() -> list[tuple[str, str, int | None]]:
    """(name, text, exit code): tuning split + shared corpus + fixtures, each distinct text once."""
    docs: dict[str, tuple[str, str, int | None]] = {}

    def add(name: str, text: str, code: int | None) -> None:
        docs.setdefault(hashlib.sha1(text.strip().encode()).hexdigest(), (name, text, code))

    for c in _cases():
        if c.get("split") == "tuning":
            add(f"corpus:{c['id']}", c["log_excerpt"], None)
    if SHARED.is_file():
        for c in load_cases(SHARED):
            add(f"shared:{c['id']}", c["log_excerpt"], None)
    expected = json.loads((FIXTURES / "expected.json").read_text())
    for name, exp in expected.items():
        add(f"fixture:{name}", (FIXTURES / f"{name}.log").read_text(errors="replace"), exp.get("exit_code"))
    real = json.loads((FIXTURES / "real" / "sources.json").read_text())
    for name, exp in real.items():
        add(f"real:{name}", (FIXTURES / "real" / f"{name}.log").read_text(), exp.get("exit_code"))
    return list(docs.values())


def rule_documents(tmp_path: Path) -> dict[str, set[str]]:
    """Rule id -> the distinct documents in which it fired."""
    hits: dict[str, set[str]] = {}
    path = tmp_path / "doc.log"
    for name, text, code in _documents():
        path.write_text(text + "\n")
        res = triage_files([path], exit_code=code)
        for f in res["findings"]:
            for part in f["rule"].split(">")[0].split("+"):
                hits.setdefault(part, set()).add(name)
    return hits


def test_no_rule_fits_a_single_case(tmp_path: Path) -> None:
    """A rule (or exception/frame rule) that fires in a corpus case must also fire in another
    document (another corpus case or a fixture): none is fitted to the one log it was written from.
    Rules that fire in no corpus case at all come from the procedures' upstream strings and are
    covered by their fixtures (test_triage_rules.test_every_rule_has_a_fixture)."""
    from console.triage.rules import default_catalog

    if not any(c.get("split") == "tuning" for c in _cases()):
        pytest.skip("no tuning split in tests/corpus/*.jsonl")
    cat = default_catalog()
    hits = rule_documents(tmp_path)
    ids = [r.id for r in cat.rules] + [r.id for r in cat.frame_rules] + [e.id for e in cat.exceptions]
    ids += [f"component:{c.id}" for c in cat.components]
    single = {
        rid: sorted(hits[rid])
        for rid in ids
        if len(hits.get(rid, ())) == 1 and not next(iter(hits[rid])).startswith("fixture:")
    }
    assert not single, f"rules that fire in only one corpus case: {single}"
