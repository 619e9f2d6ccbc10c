"""Tailer against real files written by real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from console.monitor.tailer import LogLine, Tailer
from console.monitor.text import split_cr_segments

pytestmark = pytest.mark.timeout(60)


def _texts(lines: list[LogLine], partial: bool = False) -> list[str]:
    return [ln.text for ln in lines if partial or not ln.partial]


def _drain(t: Tailer) -> list[LogLine]:
    out: list[LogLine] = []
    while True:
        got = t.poll()
        out += got
        if t.caught_up and not got:
            return out


def _run_writer(code: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args])


def _follow_until(t: Tailer, pred, timeout: float = 20.0) -> list[LogLine]:
    """Poll as the supervisor does (every 0.2 s once caught up) until ``pred`` holds."""
    got: list[LogLine] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got += t.poll()
        if pred(got):
            break
        if t.caught_up:
            time.sleep(0.2)
    return got


def test_partial_lines_and_resume(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntw")
    t = Tailer(log)
    assert _texts(t.poll()) == ["one"]
    assert (t.offset, t.lineno) == (4, 1)
    with open(log, "ab") as fh:
        fh.write(b"o\nthree\nfo")
    assert [(ln.lineno, ln.text, ln.offset) for ln in t.poll()] == [(2, "two", 4), (3, "three", 8)]
    # a new tailer resumes exactly where the first stopped, re-reading the unfinished line
    t2 = Tailer(log, offset=t.offset, lineno=t.lineno)
    with open(log, "ab") as fh:
        fh.write(b"ur\n")
    assert [(ln.lineno, ln.text) for ln in t2.poll()] == [(4, "four")]
    assert [(ln.lineno, ln.text) for ln in t.poll()] == [(4, "four")]


def test_missing_file_then_created(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    t = Tailer(log)
    assert t.poll() == [] and t.caught_up
    log.write_text("hello\n")
    assert _texts(t.poll()) == ["hello"]


def test_garbage_bytes_ansi_and_nul(tmp_path: Path) -> None:
    log = tmp_path / "g.log"
    log.write_bytes(b"\xff\xfe bad \xc3\x28 utf8\n\x00\x00nul\x00 line\n\x1b[31mred\x1b[0m text\n")
    texts = _texts(Tailer(log).poll())
    assert texts[0] == "\ufffd\ufffd bad \ufffd( utf8"
    assert texts[1] == "nul line"
    assert texts[2] == "red text"


def test_giant_line_bounded(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    chunk = b"x" * (1 << 20)
    with open(log, "wb") as fh:
        fh.write(b"before\n")
        for _ in range(100):  # a 100 MB line without a newline
            fh.write(chunk)
        fh.write(b"\nafter\n")
    t = Tailer(log, max_line_bytes=1 << 20)
    seen = 0
    maxlen = 0
    texts: list[str] = []
    t0 = time.monotonic()
    while True:
        got = t.poll()
        for ln in got:
            maxlen = max(maxlen, len(ln.text))
            if ln.truncated:
                seen += 1
                assert ln.lineno == 2
            else:
                texts.append(ln.text)
        if t.caught_up and not got:
            break
    assert time.monotonic() - t0 < 30
    assert texts == ["before", "after"]
    assert seen == 100 and maxlen <= 1 << 20
    assert t.lineno == 3


def test_cr_redraws_keep_messages() -> None:
    line = (
        "\rTraining Progress:   0%|          | 0/2 [00:00<?, ?it/s]"
        "\rTraining Progress:  50%|#####     | 1/2 [00:01<00:01,  1.00s/it]step:1 - loss:0.5"
    )
    assert split_cr_segments(line) == [
        "step:1 - loss:0.5",
        "Training Progress:  50%|#####     | 1/2 [00:01<00:01,  1.00s/it]",
    ]
    assert split_cr_segments("plain") == ["plain"]


def test_real_tqdm_process(tmp_path: Path) -> None:
    """A real tqdm bar (stderr) interleaved with prints (stdout), both into one file."""
    log = tmp_path / "tqdm.log"
    code = """
    import sys, time
    from tqdm import tqdm
    bar = tqdm(total=3, desc="Training Progress", mininterval=0, file=sys.stderr)
    for i in range(1, 4):
        time.sleep(0.05)
        print(f"step:{i} - actor/pg_loss:np.float64(0.{i})", flush=True)
        bar.update(1)
    bar.close()
    print("done", flush=True)
    """
    with open(log, "wb") as fh:
        subprocess.run([sys.executable, "-c", textwrap.dedent(code)], stdout=fh, stderr=fh, check=True)
    texts = _texts(Tailer(log).poll())
    steps = [t for t in texts if t.startswith("step:")]
    assert steps == [f"step:{i} - actor/pg_loss:np.float64(0.{i})" for i in (1, 2, 3)]
    bars = [t for t in texts if "Training Progress" in t]
    assert bars and "3/3" in bars[-1]
    assert texts[-1] == "done"
    assert not any("\r" in t for t in texts)


def test_partial_bar_state_is_reported(tmp_path: Path) -> None:
    log = tmp_path / "p.log"
    log.write_bytes(b"start\n\rTraining Progress:   0%|          | 0/2 [00:00<?, ?it/s]")
    t = Tailer(log)
    got = t.poll()
    assert [ln.text for ln in got if not ln.partial] == ["start"]
    partial = [ln for ln in got if ln.partial]
    assert len(partial) == 1 and "0/2" in partial[0].text and partial[0].lineno == 2
    assert t.poll() == []  # unchanged state is not repeated
    with open(log, "ab") as fh:
        fh.write(b"\rTraining Progress:  50%|#####     | 1/2 [00:01<00:01,  1.00s/it]")
    assert [ln.text for ln in t.poll() if ln.partial][0].endswith("1/2 [00:01<00:01,  1.00s/it]")
    assert "1/2" in t.pending_text


def test_rotation_mid_run(tmp_path: Path) -> None:
    """A real writer renames its log and creates a new one (logrotate create mode)."""
    log = tmp_path / "r.log"
    code = """
    import os, sys, time
    path = sys.argv[1]
    fh = open(path, "w")
    for i in range(200):
        fh.write(f"line {i}\\n"); fh.flush()
        if i == 99:
            fh.close(); os.rename(path, path + ".1"); fh = open(path, "w")
        time.sleep(0.002)
    fh.close()
    """
    t = Tailer(log)
    proc = _run_writer(code, str(log))
    got = _follow_until(t, lambda g: any(ln.text == "line 199" for ln in g))
    proc.wait(10)
    assert _texts(got) == [f"line {i}" for i in range(200)]
    assert t.rotations == 1


def test_copytruncate_mid_run(tmp_path: Path) -> None:
    """The log is copied and truncated in place while a real writer (O_APPEND) keeps going."""
    log = tmp_path / "c.log"
    code = """
    import sys, time
    fh = open(sys.argv[1], "a")
    for i in range(60):
        fh.write(f"line {i}\\n"); fh.flush()
        time.sleep(0.01)
    """
    t = Tailer(log)
    log.touch()
    proc = _run_writer(code, str(log))
    seen: list[str] = []
    deadline = time.monotonic() + 20
    truncated = False
    while time.monotonic() < deadline:
        seen += _texts(t.poll())
        if not truncated and len(seen) >= 30:
            data = log.read_bytes()
            (tmp_path / "c.log.1").write_bytes(data)
            os.truncate(log, 0)
            truncated = True
        if "line 59" in seen:
            break
        time.sleep(0.02)
    proc.wait(10)
    seen += _texts(_drain(t))
    assert t.truncations == 1
    assert seen[-1] == "line 59"
    nums = [int(s.split()[1]) for s in seen]
    assert nums == sorted(nums)  # nothing replayed from before the truncation
    # lines written between our last read and the truncation are in the copy, not lost silently
    copied = (tmp_path / "c.log.1").read_text().split("\n")
    missing = set(range(60)) - set(nums)
    assert all(f"line {i}" in copied for i in missing)


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = st.sampled_from(
    [
        b"a",
        b"line",
        b"\n",
        b"\r",
        b"\x1b[31m",
        b"\x1b[0m",
        b"\xff",
        b"\x00",
        "é".encode(),
        b"\xc3",
        b"Training Progress:  50%|#####     | 1/2 [00:01<00:01,  1.00s/it]",
        b"step:1 - x:1",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(_PIECES, max_size=60).map(b"".join), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_chunking_does_not_change_lines(tmp_path: Path, data: bytes, cuts: list[int]) -> None:
    """However the writer's appends are split, the complete lines read are the same."""
    whole = tmp_path / "whole.log"
    whole.write_bytes(data)
    expected = [(ln.lineno, ln.text) for ln in _drain(Tailer(whole)) if not ln.partial]
    inc = tmp_path / "inc.log"
    inc.write_bytes(b"")
    t = Tailer(inc)
    got: list[LogLine] = []
    prev = 0
    for c in sorted({min(c, len(data)) for c in cuts} | {len(data)}):
        with open(inc, "ab") as fh:
            fh.write(data[prev:c])
        prev = c
        got += t.poll()
    assert [(ln.lineno, ln.text) for ln in got if not ln.partial] == expected
    inc.unlink()
    whole.unlink()
