"""Differential tests: the fast triage paths against feeding every line through the engine.

Post-mortem: ``scan_paths`` (chunk automaton, line gate, batch key pass) must give the same triage
JSON as ``feed_every_line`` on every fixture, every corpus case and on generated RL-shaped logs
(failure at the start, middle and end, giant lines, CR redraws, invalid UTF-8, NUL bytes, ANSI codes
inside literals, tracebacks across chunk boundaries, several files). Live: ``GatedFeed`` must
publish the same findings as ``engine.feed`` for every line. Plus the exactness of the pieces the
gate relies on (regex factors, case folding).
"""

from __future__ import annotations

import importlib.util
import io
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from console.monitor.text import clean_segments
from console.triage import regexfactors
from console.triage.engine import DETECT_LINES, TriageEngine
from console.triage.fastscan import FastFileScanner, GatedFeed, LineGate
from console.triage.rules import default_catalog
from console.triage.scan import feed_every_line, triage_files

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "triage"
CORPORA = [
    *sorted((ROOT / "tests" / "corpus").glob("*.jsonl")),
    ROOT.parent / "shared" / "triage-corpus" / "cases.jsonl",
]


def _rl_log_module() -> Any:
    spec = importlib.util.spec_from_file_location("rl_log", ROOT / "scripts" / "rl_log.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["rl_log"] = mod
    spec.loader.exec_module(mod)
    return mod


def _both(paths: list[Path], framework: str | None = None, exit_code: int | None = None) -> tuple[dict, dict]:
    fast = triage_files(paths, framework=framework, exit_code=exit_code)
    ref = triage_files(paths, framework=framework, exit_code=exit_code, every_line=True)
    return fast, ref


def _scan_bytes(
    data: bytes, chunk_size: int, framework: str = "unknown"
) -> tuple[dict, dict, FastFileScanner]:
    """Fast scanner with a small chunk size (many chunk boundaries) vs every line, on the same bytes."""
    fast = TriageEngine(framework)
    scanner = FastFileScanner(fast, LineGate(fast))
    lines = scanner.scan(io.BytesIO(data), chunk_size=chunk_size)
    ref = TriageEngine(framework)
    assert feed_every_line(ref, io.BytesIO(data)) == lines
    assert fast.last_line == ref.last_line
    return fast.result(), ref.result(), scanner


# ---------------------------------------------------------------------------------------- real logs


def test_every_fixture_same_as_line_by_line() -> None:
    logs = sorted(FIXTURES.rglob("*.log"))
    assert len(logs) > 50
    for log in logs:
        fast, ref = _both([log])
        assert fast == ref, log.name
        fast, ref = _both([log], exit_code=1)
        assert fast == ref, log.name


def _corpus_cases() -> list[tuple[str, str]]:
    cases = []
    for path in CORPORA:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                cases.append((f"{path.name}:{case.get('id')}", str(case["log_excerpt"])))
    return cases


def test_every_corpus_case_same_as_line_by_line(tmp_path: Path) -> None:
    cases = _corpus_cases()
    if not cases:
        pytest.skip(f"no corpus in {[str(p) for p in CORPORA]}")
    log = tmp_path / "case.log"
    for name, excerpt in cases:
        log.write_text(excerpt + "\n", encoding="utf-8")
        fast, ref = _both([log])
        assert fast == ref, name


def test_fixtures_as_several_files_and_with_small_chunks(tmp_path: Path) -> None:
    logs = sorted(FIXTURES.glob("*.log"))[:12]
    fast, ref = _both(logs)
    assert fast == ref
    data = b"".join(p.read_bytes() for p in logs)
    for chunk in (64, 997, 4096):
        fast, ref, _ = _scan_bytes(data, chunk)
        assert fast == ref, chunk


# ---------------------------------------------------------------------------------------- generated logs


@pytest.mark.parametrize("failure", ["oom", "nccl", "import", "nan", "none"])
@pytest.mark.parametrize("fail_at", [0.0, 0.5, 0.999])
def test_rl_shaped_logs_same_as_line_by_line(tmp_path: Path, failure: str, fail_at: float) -> None:
    rl_log = _rl_log_module()
    log = tmp_path / "rl.log"
    rl_log.write_rl_log(log, 600_000, seed=7, failure=failure, fail_at=fail_at)
    fast, ref = _both([log])
    assert fast == ref
    if failure == "oom":
        assert fast["primary"]["class"] == "cuda_oom"
    fast, ref, scanner = _scan_bytes(log.read_bytes(), 256 << 10)
    assert fast == ref
    # most lines never reach the engine (a traceback left open under the driver's prefix, as this OOM
    # is, makes every later driver line count, but not the worker lines)
    assert scanner.fed < scanner.lineno / (3 if failure == "oom" and fail_at < 0.9 else 10)


def test_rl_log_with_giant_lines_cr_invalid_utf8_and_nul(tmp_path: Path) -> None:
    rl_log = _rl_log_module()
    parts = list(rl_log.rl_chunks(400_000, seed=3, failure="oom", fail_at=0.7))
    rnd = random.Random(5)
    odd = [
        b"x" * 200_000 + b" CUDA out of memory at the end of a giant line\n",  # literal past the 64 KiB cap
        b"Traceback (most recent call last):"
        + b"y" * 300_000
        + b"\n",  # a giant line with a literal at its start
        b"\xff\xfe\xc3(bad utf-8) torch.OutOfMemoryError: CUDA out of memory\r\n",
        b"Err\x00or: a NUL inside a literal\n",
        b"\x1b[35mValueError\x1b[0m: \x1b[35mcoloured exception line\x1b[0m\n",
        b"Tr\x1b[1maceback (most recent call last):\n",  # ANSI code inside the traceback literal
        b"E\x1b\x1b[0m[0mrror: two rounds of cleaning join this literal\n",
        b"progress 10%\rTraining Progress:  50%|#####     | 5/10 [00:10<00:10]\r\n",
        b"line\r" + b"No space left on device" + b"\r   \n",
        b"\r\n",
        b"",
    ]
    for item in odd:
        parts.insert(rnd.randrange(len(parts)), item)
    data = b"".join(parts) + b"tail without newline: RuntimeError: NCCL error"
    log = tmp_path / "odd.log"
    log.write_bytes(data)
    fast, ref = _both([log])
    assert fast == ref
    for chunk in (4096, 70_000, 1 << 20):  # giant lines longer than a chunk, tracebacks across chunks
        fast, ref, _ = _scan_bytes(data, chunk)
        assert fast == ref, chunk


def test_framework_evidence_around_the_detection_window(tmp_path: Path) -> None:
    filler = b"".join(b"plain line %d\n" % i for i in range(DETECT_LINES + 10))
    for at in (1, DETECT_LINES - 1, DETECT_LINES, DETECT_LINES + 1, DETECT_LINES + 5):
        lines = filler.split(b"\n")
        lines.insert(at - 1, b"(TaskRunner pid=1) verl.trainer.main_ppo starting")
        data = b"\n".join(lines) + b"\nRuntimeError: boom\n"
        for chunk in (512, 1 << 20):
            fast, ref, _ = _scan_bytes(data, chunk)
            assert fast == ref, (at, chunk)
            assert fast["framework"] == ("verl" if at <= DETECT_LINES else "unknown")
    # two files: the window ends in the first one and must not open again in the second
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_bytes(filler)
    second.write_bytes(b"(TaskRunner pid=1) verl.trainer\nRuntimeError: boom\n")
    fast, ref = _both([first, second])
    assert fast == ref
    assert fast["framework"] == "unknown"
    first.write_bytes(b"short\n")
    fast, ref = _both([first, second])
    assert fast == ref
    assert fast["framework"] == "verl"


def test_glog_level_lines_same_as_line_by_line() -> None:
    """Lines whose only literals are glog levels (``.cc:``, `` C ``...) reach the engine by the keys of the
    error-level regex (``regexfactors.pair_keys``): each form alone and all of them, among other lines."""
    forms = [
        b"E1121 10:00:00.123456  123 gcs_server.cc:12] lost",  # glog with no bracket: key "e1"
        b"F\x1b[m1121 10:00:00.1 7 gcs_server.cc:1] lost",  # an ANSI code inside the key "f1"
        "E\u0663\u0661\u0662\u0661 10:00:00.1 1 gcs_server.cc:1] x".encode(),  # non-ASCII digits
        b"[W1121 10:00:00.1 ProcessGroupNCCL.cpp:45] gcs_server [repeated 7x across cluster]",  # no key
        b"[2024-05-01 10:00:00,000 C 12 34] gcs_server died",
        b"[F a/b.cc:3] gcs_server\r[E0 gcs_server.cc:1]",
    ]
    filler = b"".join(b"(Worker pid=%d) Checkpoint %d saved to /tmp/ckpt\n" % (i, i) for i in range(40))
    for data in [filler + f + b"\n" + filler for f in forms] + [filler.join(f + b"\n" for f in forms * 3)]:
        fast, ref, _ = _scan_bytes(data, 1 << 20, "verl")
        assert fast == ref, data[-200:]
    assert "gcs_server" in json.dumps(fast)


def _random_log(rnd: random.Random, n: int) -> bytes:
    """Lines assembled from fragments that matter to the engine, mixed with noise and damage."""
    cat = default_catalog()
    lits = list(cat.literals()) + [
        "Traceback (most recent call last)",
        'File "x.py", line 3, in f',
        "ValueError: bad",
        "  raise X",
        "step:3 - a:1",
        "grad_norm: nan",
        "reward: 0.9",
        "= Step 4/5 =",
        "x.py:12: in test",
        "[repeated 3x]",
    ]
    noise = [
        "(Worker pid=12) ",
        "\x1b[36m",
        "\x1b[0m",
        "\r",
        " ",
        "INFO 11-21 10:00:00 x.py:1] ",
        "\xe9",
        "█",
    ]
    out = []
    for _ in range(n):
        parts = [
            rnd.choice(noise) if rnd.random() < 0.6 else rnd.choice(lits) for _ in range(rnd.randint(0, 4))
        ]
        line = "".join(parts).encode()
        if rnd.random() < 0.05:
            cut = rnd.randrange(len(line) + 1)
            line = line[:cut] + rnd.choice([b"\x1b[31m", b"\x00", b"\xff", b"\x1b]0;t\x07"]) + line[cut:]
        out.append(line)
    return b"\n".join(out) + b"\n"


@pytest.mark.parametrize("seed", range(6))
def test_random_logs_same_as_line_by_line(seed: int) -> None:
    rnd = random.Random(seed)
    data = _random_log(rnd, 3000)
    for chunk in (333, 1 << 20):
        fast, ref, _ = _scan_bytes(data, chunk)
        assert fast == ref, (seed, chunk)


# ---------------------------------------------------------------------------------------- live path


def test_live_gated_feed_publishes_the_same_findings() -> None:
    rl_log = _rl_log_module()
    data = b"".join(rl_log.rl_chunks(300_000, seed=11, failure="oom", fail_at=0.6))
    data += _random_log(random.Random(3), 800)
    plain = TriageEngine("unknown")
    gated = GatedFeed(TriageEngine("unknown"))
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        for text in clean_segments(raw):  # what the tailer hands the supervisor
            assert gated.feed(lineno, text) == plain.feed(lineno, text), (lineno, text)
    assert gated.engine.result(1) == plain.result(1)
    assert gated.engine.result() == plain.result()
    assert gated.skipped > 2 * gated.fed  # (the random tail is dense in literals)


def _with_repeats(lines: list[str], rnd: random.Random) -> list[str]:
    """``lines`` with earlier lines printed again here and there (a warning every step)."""
    out: list[str] = []
    for line in lines:
        out.append(line)
        if out and rnd.random() < 0.2:
            out.append(rnd.choice(out[-400:]))
    return out


def test_marker_and_metric_only_lines_same_as_the_whole_feed() -> None:
    """feed()'s cheap paths (lines whose literals only select markers or metrics with no traceback open,
    repeated rule-only lines counted from memory, metric lines read from a learned shape) against the
    whole of feed() on every line: fixtures, corpus, an RL-shaped log, a random log, all with repeats."""
    rl_log = _rl_log_module()
    data = b"".join(rl_log.rl_chunks(300_000, seed=5, failure="nan", fail_at=0.7))
    data += _random_log(random.Random(4), 800)
    sources = [p.read_text(errors="replace").splitlines() for p in sorted(FIXTURES.rglob("*.log"))]
    sources += [ex.splitlines() for _, ex in _corpus_cases()]
    sources.append(data.decode(errors="replace").split("\n"))
    rnd = random.Random(8)
    sources += [_with_repeats(lines, rnd) for lines in sources]
    cheap_lines = repeats = 0
    for lines in sources:
        cheap, whole = TriageEngine("unknown"), TriageEngine("unknown")
        whole._light_literals = frozenset()  # never the cheap path
        whole._repeatable = frozenset()  # no line remembered
        whole._metrics.learn = False  # _PAIR on every metric line
        calls = 0

        def count(lineno: int, text: str, present: set[str], _f: Any = cheap._feed_markers_only) -> Any:
            nonlocal calls
            calls += 1
            return _f(lineno, text, present)

        cheap._feed_markers_only = count  # type: ignore[method-assign]
        for lineno, text in enumerate(lines, 1):
            assert cheap.feed(lineno, text) == whole.feed(lineno, text), (lineno, text)
        assert cheap.result(1) == whole.result(1)
        assert cheap.result() == whole.result()
        cheap_lines += calls
        repeats += len(cheap._repeats)
        assert not whole._repeats and not whole._metrics.shapes
    assert cheap_lines > 100  # the cheap path was taken (progress bars, banners, verl step lines)
    assert repeats > 50  # lines were remembered


# ---------------------------------------------------------------------------------------- the pieces


def _all_lines() -> list[str]:
    lines = [ln for p in sorted(FIXTURES.rglob("*.log")) for ln in p.read_text(errors="replace").splitlines()]
    lines += [ln for _, ex in _corpus_cases() for ln in ex.splitlines()]
    return lines


def test_regex_factors_never_rule_out_a_match() -> None:
    cat = default_catalog()
    lines = _all_lines()
    matched = 0
    for rule in cat.rules:
        f = regexfactors.required(rule.regex)
        assert f.query == regexfactors.required(rule.regex).query
        for line in lines:
            if rule.regex.search(line):
                matched += 1
                assert f.may_match(line), (rule.id, line)
                assert regexfactors.evaluate(f.query, regexfactors.fold(line) if f.ignorecase else line)
                if f.keys:
                    hay = regexfactors.fold(line) if f.ignorecase else line
                    assert any(k in hay for k in f.keys), (rule.id, line)
    assert matched > 100


@pytest.mark.parametrize(
    "pattern,yes,no",
    [
        (
            r"(?i)stream is capturing|during (?:graph )?capture",
            ["DURING GRAPH CAPTURE", "Stream Is Capturing"],
            ["capturing", "during x"],
        ),
        (
            r"NCCL (?:communicator )?(?:[Tt]imeout|timed out)",
            ["NCCL communicator Timeout", "NCCL timed out"],
            ["NCCL  error"],
        ),
        (r"ab+c(?=d)|x{2,3}y", ["abbbcd", "xxy"], ["acd", "xy"]),
        (r"(?i:sKip) me", ["SKIP me", "\u017fkip me", "s\u212aip me"], ["skip", "me"]),
        (r"(?i)if", ["\u0130F", "\u0131f"], ["i f"]),
    ],
)
def test_regex_factors_cases(pattern: str, yes: list[str], no: list[str]) -> None:
    rx = re.compile(pattern)
    f = regexfactors.required(rx)
    for text in yes:
        if rx.search(text):
            assert f.may_match(text), text
    for text in no:
        assert not rx.search(text)
        assert not f.may_match(text) or f.query is True, text


def test_pair_keys_are_in_every_line_a_pattern_matches() -> None:
    from console.triage.engine import _ERROR_LEVEL_RE
    from console.triage.fastscan import top_alternatives

    pats = [*top_alternatives(_ERROR_LEVEL_RE), *(r.regex for r in default_catalog().rules)]
    lines = _all_lines() + ["E\u0663\u0661\u0662\u0661 10:00:00.1 1 a.cc:1]", "[2024-05-01 1:0 C 1 2]"]
    matched = 0
    for rx in pats:
        keys = regexfactors.pair_keys(rx)
        for line in lines if keys else ():
            if rx.search(line):
                matched += 1
                assert any(k in line.encode().lower() for k in keys), (rx.pattern, line)
    assert matched > 20
    assert regexfactors.pair_keys(re.compile(r"x[^a]b|y")) is None
    assert regexfactors.pair_keys(re.compile(r"(?:^|\s)[EF]\d+")) == sorted(
        e + d
        for e in (b"e", b"f")
        for d in [b"%d" % i for i in range(10)] + [bytes([b]) for b in range(0xC2, 0xF5)]
    )


def test_case_folding_covers_every_character_a_regex_folds_to_ascii() -> None:
    rx = re.compile(r"(?i)[\x00-\x7f]")
    special = {chr(c) for c in range(0x80, 0x110000) if rx.fullmatch(chr(c))}
    assert special == {"\u0130", "\u0131", "\u017f", "\u212a"}
    for ch in special:
        assert regexfactors.fold(ch).isascii()
        assert ch.encode() in regexfactors.FOLD_SPECIALS


def _metric_line(rnd: random.Random, template: str, places: list[int]) -> str:
    """``template`` with each ``#`` a number with ``places[i]`` decimals (-1: an integer), now and then
    a non-finite or exponent form instead."""
    it = iter(places)

    def num(_: Any) -> str:
        p = next(it)
        if rnd.random() < 0.01:
            return rnd.choice(["nan", "inf", "-inf", "NaN", "1e5", "2.5E-3", "7."])
        if p < 0:
            return str(rnd.randint(0, 10 ** rnd.randint(1, 12)))
        return f"{rnd.uniform(0, 50):.{p}f}"

    return re.sub("#", num, template)


def test_metric_shapes_read_what_the_pair_regex_reads() -> None:
    """MetricWatch reads a long line it has seen the shape of (same text, other digits) from that shape:
    the same step and pairs as _PAIR and _STEP on the line itself, on lines built to be awkward."""
    from console.triage import metricwatch as mw

    pieces = [
        "(TaskRunner pid=#) step:# - ",
        "actor/grad_norm:np.float64(#) - ",
        "critic/score/mean:# - ",
        "critic/rewards/mean:tensor(#) - ",
        "timing_s/gen:# - ",
        "grad norm x#: # | ",
        "reward# = # ",
        "layer#.grad_norm=#e# ",
        "Iteration # | ",
        "step=\u0663# ",
        "100%|# ",
        "a#b#c: # ",
        "grad#norm: #.#.# ",
        "mean reward=#-# ",
        "x=#reward: # ",
        "\u017ftep # ",
        "note: 5% of # steps ",
    ]
    rnd = random.Random(23)
    read = learned = 0
    for _ in range(200):
        template = "".join(rnd.choice(pieces) for _ in range(rnd.randint(4, 14)))
        if len(template) < mw.SHAPE_MIN_LEN:
            template += "training/epoch:# - " * ((mw.SHAPE_MIN_LEN - len(template)) // 15 + 1)
        watch = mw.MetricWatch()
        places = [rnd.choice([-1, -1, 0, 1, 4]) for _ in range(template.count("#"))]
        for _ in range(8):
            line = _metric_line(rnd, template, places)
            got = watch.read(line)
            pairs: list[tuple[str, str]] = []
            for m in mw._PAIR.finditer(line):
                kind = mw._kind(m.group("key"))
                if kind is not None and kind not in [k for k, _ in pairs]:
                    pairs.append((kind, m.group("val")))
                if len(pairs) == 2:
                    break
            step = mw._STEP.search(line)
            want = (int(step.group(1)) if step and pairs else None), pairs
            assert got == want, line
            read += bool(pairs)
        learned += bool(watch.shapes)
    assert read > 500
    assert learned > 100  # shapes were learned (and used for the lines after)


def test_error_level_by_alternatives_same_as_the_whole_regex() -> None:
    """The gate reads feed()'s error-level regex one top-level alternative at a time: the same answer as
    the whole regex on every fixture and corpus line, and the split itself on awkward patterns."""
    from console.triage.fastscan import top_alternatives

    engine = TriageEngine("unknown")
    gate = LineGate(engine)
    lines = _all_lines() + [
        "[E704 13:48:58.26 ProcessGroupNCCL.cpp:12] boom",
        "[F file.cc:1] x [repeated 2x across cluster]",
        "[2024-05-01 10:00:00,000 E 1234 5678] raylet died",
        "E1121 10:00:00.123456  123 foo.cc:12] fatal",
        "xERROR[repeated 3x across cluster]",
        "(pid=1) ERROR: bad",
    ]
    hits = 0
    for line in lines:
        want = engine.error_level_line(line)
        assert gate._error_level(line) == want, line
        hits += want
    assert hits > 20
    for src, parts in [
        (r"a|b(c|d)|[|(]e|\|f", [r"a", r"b(c|d)", r"[|(]e", r"\|f"]),
        (r"[]|]x|y", [r"[]|]x", r"y"]),
        (r"(?i)a|b", [r"(?i)a|b"]),
        (r"abc", [r"abc"]),
    ]:
        assert [p.pattern for p in top_alternatives(re.compile(src))] == parts, src
