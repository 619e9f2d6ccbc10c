"""The same real log, pasted or collected the ways people do, triages the same.

Logs reach triage with a tag in front of every line: a CI or ``kubectl logs --timestamps`` time, a
markdown quote, ``srun --label`` rank numbers, pdsh/DeepSpeed host names, mpirun ``--tag-output``, a
collector's prefix (journald, ``kubectl logs --prefix``), a line number, colour codes without their
ESC; or indented as a whole, or hard-wrapped at a terminal's width. Each form is applied to every real
fixture: verdict, class and rule must not move.
"""

from __future__ import annotations

import io
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from console.triage.paste import (
    ROW_CAP,
    Decolored,
    Dedented,
    Unnumbered,
    Unwrapped,
    paste_indent,
    pasted_reader,
    wrap_width,
)
from tests.test_triage_fastpath import _rl_log_module
from tests.triage_helpers import REAL, primary, tri_text


def _each(tag: str) -> Callable[[str], str]:
    return lambda text: "\n".join(tag + line for line in text.split("\n"))


FORMS: dict[str, Callable[[str], str]] = {
    "ci-timestamp": _each("2025-03-04T10:11:12.3456789Z "),
    "markdown-quote": lambda text: "\n".join(f"> {line}" if line else ">" for line in text.split("\n")),
    "srun-label": _each("3: "),
    "host-label": _each("worker-12: "),
    "ip-label": _each("10.0.7.21: "),
    "mpirun-tag": _each("[1,0]<stderr>:"),
    "indented": _each("    "),
    # a log collector's prefix: journald, kubectl logs --prefix, a timestamp added by the collector
    "journald": _each("Nov 23 10:11:12 gpu-node-3 python[48213]: "),
    "kubectl-prefix": _each("[pod/trainer-0/main] "),
    "collector-time": _each("[2025-03-04 10:11:12,345] "),
    # colour codes whose ESC byte the copy dropped, on a Ray prefix or around the whole line
    "lost-colour-prefix": _each("[36m(TaskRunner pid=12345)[0m "),
    "lost-colour-line": lambda text: "\n".join(f"[1;31m{line}[0m" for line in text.split("\n")),
}
# Line numbers in front of every line: grep -n, cat -n, a log viewer's gutter. A paste of one or two lines
# cannot be told from a log whose lines start with a number, so these forms apply to longer fixtures.
NUMBERED: dict[str, Callable[[str], str]] = {
    "grep-n": lambda text: "\n".join(f"{n}:{line}" for n, line in enumerate(text.split("\n"), 1187)),
    "cat-n": lambda text: "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(text.split("\n"), 1)),
    "viewer-gutter": lambda text: "\n".join(f"[{n}] {line}" for n, line in enumerate(text.split("\n"), 98)),
    "padded-column": lambda text: "\n".join(f"{n:>4}  {line}" for n, line in enumerate(text.split("\n"), 1)),
}


def _fixtures() -> list[Path]:
    return sorted(REAL.glob("*.log"))


@pytest.mark.parametrize("form", sorted(FORMS))
def test_paste_forms_keep_the_finding(tmp_path: Path, form: str) -> None:
    moved = []
    for path in _fixtures():
        text = path.read_text(encoding="utf-8", errors="replace")
        want = primary(tri_text(tmp_path, text))
        got = primary(tri_text(tmp_path, FORMS[form](text)))
        if got != want:
            moved.append(f"{path.stem}: {want} -> {got}")
    assert not moved, f"{form}: {len(moved)} fixtures changed:\n" + "\n".join(moved)


@pytest.mark.parametrize("form", sorted(NUMBERED))
def test_numbered_pastes_keep_the_finding(tmp_path: Path, form: str) -> None:
    moved, read = [], 0
    for path in _fixtures():
        text = path.read_text(encoding="utf-8", errors="replace")
        if len([line for line in text.split("\n") if line.strip()]) < 3:
            continue
        read += 1
        want = primary(tri_text(tmp_path, text))
        got = primary(tri_text(tmp_path, NUMBERED[form](text)))
        if got != want:
            moved.append(f"{path.stem}: {want} -> {got}")
    assert read >= 80
    assert not moved, f"{form}: {len(moved)} of {read} fixtures changed:\n" + "\n".join(moved)


def test_numbering_is_not_taken_from_a_log_whose_lines_start_with_numbers() -> None:
    """Timestamps, step tables and rank labels lead lines with numbers too; none is a line-number column."""
    logs = {
        "dates": "2025-03-04 10:11:12 INFO a\n2025-03-04 10:11:13 INFO b\n2025-03-04 10:11:14 ERROR c\n",
        "clock": "10:11:12 a\n10:11:12 b\n10:11:13 c\n10:11:15 d\n",
        "steps by ten": "10 loss=0.5\n20 loss=0.4\n30 loss=0.3\n40 loss=0.2\n",
        "ranks": "0: a\n0: b\n1: a\n1: b\n",
        "progress": "1/10 [00:01<00:09]\n2/10 [00:02<00:08]\n3/10 [00:03<00:07]\n",
    }
    for name, text in logs.items():
        assert pasted_reader(io.BytesIO(text.encode())).read() == text.encode(), name


def test_collector_prefix_leaves_process_prefixes_and_logger_records() -> None:
    """A prefix triage reads as a process (Ray, torchrun ranks) keeps naming the process, and a logger's
    record of a traceback keeps its level and source: neither is removed as a collector's prefix."""
    tb = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: bad\n'
    for tag in ("(TaskRunner pid=12) ", "[rank3]: ", "ERROR 07-23 10:11:12 [core.py:12] "):
        text = "".join(tag + line + "\n" for line in tb.splitlines()).encode()
        assert pasted_reader(io.BytesIO(text)).read() == text, tag
    mixed = "(TaskRunner pid=12) [pod/a-0/main] Traceback (most recent call last):\n"
    mixed += '(TaskRunner pid=12) [pod/a-0/main]   File "x.py", line 1, in <module>\n'
    assert pasted_reader(io.BytesIO(mixed.encode())).read().decode().splitlines() == [
        "(TaskRunner pid=12) Traceback (most recent call last):",
        '(TaskRunner pid=12)   File "x.py", line 1, in <module>',
    ]


def test_prefixes_do_not_eat_exception_names(tmp_path: Path) -> None:
    """The host-label form needs a digit before the colon: "RuntimeError: ..." is not a host."""
    text = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nRuntimeError: boom\n'
    verdict, cls, _ = primary(tri_text(tmp_path, text, exit_code=1))
    assert (verdict, cls) == ("Fail", "unknown_error")
    res = tri_text(tmp_path, text.replace("RuntimeError", "torch.OutOfMemoryError"), exit_code=1)
    assert primary(res)[:2] == ("Fail", "cuda_oom")


def test_paste_indent_is_the_common_indentation_of_the_head() -> None:
    assert paste_indent(io.BytesIO(b"  a\n\n   b\n  c")) == b"  "
    assert paste_indent(io.BytesIO(b"\ta\n\t  b\n")) == b"\t"
    assert paste_indent(io.BytesIO(b"a\n  b\n")) == b""
    assert paste_indent(io.BytesIO(b"")) == b""


def test_dedented_reader_removes_the_indent_at_every_read_size() -> None:
    """Whatever the read sizes, the lines come out as they were before the paste (lines that lack the
    indent kept as they are), and their count does not change."""
    rnd = random.Random(7)
    for _ in range(3000):
        indent = rnd.choice([b"  ", b"    ", b"\t", b" \t "])
        lines = [
            bytes(rnd.choice(b"ab \t") for _ in range(rnd.randint(0, 7))) for _ in range(rnd.randint(0, 12))
        ]
        pasted = b"\n".join(indent + x if rnd.random() < 0.9 else x for x in lines) + rnd.choice([b"", b"\n"])
        want = b"\n".join(x[len(indent) :] if x.startswith(indent) else x for x in pasted.split(b"\n"))
        reader, out = Dedented(io.BytesIO(pasted), indent), b""
        while chunk := reader.read(rnd.randint(1, 9)):
            out += chunk
        assert out == want, (pasted, out)


_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<n>\d+), in (?P<func>[\w<>.]+)\s*$')
# Rendered as IPython prints them, these lose what they are read by: a traceback cut above its header
# (IPython frames are read only inside an opened traceback) and a signal handler's quoted call.
IPYTHON_UNREAD = {"hub_load_cut_traceback", "cancel_sigkill_handler", "import_chain_cut_megatron_te"}


def ipython(text: str) -> str:
    """A Python traceback as IPython/Jupyter prints it: a typed header, "File p:N, in f()" frames and
    "----> N code" source lines."""
    out: list[str] = []
    last = None
    for line in text.split("\n"):
        m = _PY_FRAME.match(line)
        if line.strip() == "Traceback (most recent call last):":
            out += ["-" * 75, "Error" + " " * 37 + "Traceback (most recent call last)"]
        elif m:
            out += ["", f"File {m['path']}:{m['n']}, in {m['func']}()"]
            last = m["n"]
        elif last and line.startswith("    ") and line.strip():
            out.append(f"----> {last} {line.strip()}")
            last = None
        else:
            out.append(line)
    return "\n".join(out)


def flattened(text: str) -> str:
    """Each traceback as a log collector (CloudWatch, a web log view) stores it: the header, its frames and
    their source lines joined into one line; the exception line stays on its own."""
    out: list[str] = []
    joined: str | None = None
    for line in text.split("\n"):
        if "Traceback (most recent call last)" in line:
            if joined is not None:
                out.append(joined)
            joined = line
        elif joined is not None and line[:1] in (" ", "\t"):
            joined += " " + line.strip()
        else:
            if joined is not None:
                out.append(joined)
                joined = None
            out.append(line)
    if joined is not None:
        out.append(joined)
    return "\n".join(out)


def test_flattened_tracebacks_keep_the_finding(tmp_path: Path) -> None:
    moved, read = [], 0
    for path in _fixtures():
        text = path.read_text(encoding="utf-8", errors="replace")
        if "Traceback (most recent call last)" not in text:
            continue
        read += 1
        want = primary(tri_text(tmp_path, text))[:2]
        got = primary(tri_text(tmp_path, flattened(text)))[:2]
        if got != want:
            moved.append(f"{path.stem}: {want} -> {got}")
    assert read >= 25
    assert not moved, f"{len(moved)} of {read} changed:\n" + "\n".join(moved)


def test_ipython_tracebacks_keep_the_finding(tmp_path: Path) -> None:
    moved = []
    for path in _fixtures():
        text = path.read_text(encoding="utf-8", errors="replace")
        if 'File "' not in text or path.stem in IPYTHON_UNREAD:
            continue
        want = primary(tri_text(tmp_path, text))[:2]
        got = primary(tri_text(tmp_path, ipython(text)))[:2]
        if got != want:
            moved.append(f"{path.stem}: {want} -> {got}")
    assert not moved, "\n".join(moved)


def hard_wrap(text: str, width: int) -> str:
    """The log as a terminal or a web log viewer copies it: every line cut into rows of ``width`` characters."""
    rows: list[str] = []
    for line in text.split("\n"):
        while len(line) > width:
            rows.append(line[:width])
            line = line[width:]
        rows.append(line)
    return "\n".join(rows)


@pytest.mark.parametrize("width", [80, 120])
def test_hard_wrapped_pastes_keep_the_finding(tmp_path: Path, width: int) -> None:
    """A paste hard-wrapped at a terminal's width reads as the log did, wherever the wrap is recognised.
    It is recognised from several rows of that width that go on mid-word: a log with one long line
    cannot be told from one that was never wrapped (those are counted, not compared)."""
    moved, read = [], 0
    for path in _fixtures():
        text = path.read_text(encoding="utf-8", errors="replace")
        wrapped = hard_wrap(text, width)
        if wrap_width(io.BytesIO(wrapped.encode())) != width:
            continue
        read += 1
        want = primary(tri_text(tmp_path, text))[:2]
        got = primary(tri_text(tmp_path, wrapped))[:2]
        if got != want:
            moved.append(f"{path.stem}: {want} -> {got}")
    assert read >= 40, f"only {read} wrapped fixtures recognised"
    assert not moved, f"{len(moved)} of {read} changed:\n" + "\n".join(moved)


NOT_WRAPPED = {
    "nvidia-smi table": "\n".join(
        [
            "+" + "-" * 77 + "+",
            "| NVIDIA-SMI 525.125.06   Driver Version: 525.125.06   CUDA Version: 12.0     |",
        ]
        + [
            f"| {i}  NVIDIA A100-SXM4-80GB  On   | 00000000:0{i}:00.0 Off |                    0 |"
            for i in range(4)
        ]
        + ["+" + "-" * 77 + "+"]
    ),
    "NCCL lines of one length": "\n".join(
        f"gpu125:46653{i}:46653{i} [{i}] NCCL INFO Channel 0{i}/0 : {i}[56000] -> {i + 1}[49000] via P2P/IPC"
        for i in range(6)
    ),
    "progress bars": "\n".join(
        f"Training:  {10 * i:2d}%|{'#' * i}{' ' * (10 - i)}| {i}/10 [00:0{i}<00:10, 1.00it/s, loss=0.{i}2]"
        for i in range(6)
    ),
}


@pytest.mark.parametrize("failure", ["oom", "nccl", "none"])
def test_logs_written_by_processes_are_read_as_they_are(tmp_path: Path, failure: str) -> None:
    """An RL-shaped run log (Ray-prefixed ANSI worker lines, tqdm redraws, step banners, logger records
    with "[INFO] [megatron...]") is no paste: it is read through the file itself, at full speed. The
    synthetic fixtures of the triage tests are not taken for a wrapped, numbered, indented or
    collector-prefixed paste either (one holds a Ray line whose colour codes lost their ESC)."""
    log = tmp_path / "run.log"
    _rl_log_module().write_rl_log(log, 1 << 20, seed=3, failure=failure)
    assert isinstance(pasted_reader(log.open("rb")), io.BufferedReader)
    taken = [
        p.name
        for p in sorted(REAL.parent.glob("*.log"))
        if not isinstance(pasted_reader(p.open("rb")), (io.BufferedReader, Decolored))
    ]
    assert not taken, taken


def test_logs_as_written_are_not_taken_for_wrapped() -> None:
    """Rows of one fixed width that a process prints itself are not a wrap; nor is any fixture as it is."""
    for name, text in NOT_WRAPPED.items():
        assert wrap_width(io.BytesIO(text.encode())) == 0, name
    taken = [p.name for p in sorted(REAL.parent.rglob("*.log")) if wrap_width(p.open("rb")) != 0]
    assert not taken, taken


def _unwrapped_reference(data: bytes, width: int) -> bytes:
    """Join every row of ``width`` characters (except a last row with no newline) to the row after it;
    the joined line stands where its last row was and the rows before it read empty."""
    ends = data.endswith(b"\n")
    rows = data.split(b"\n")[: -1 if ends else None]
    out: list[bytes] = []
    held: list[bytes] = []
    for i, row in enumerate(rows):
        if (ends or i < len(rows) - 1) and len(row.rstrip(b"\r").decode()) == width:
            held.append(row.rstrip(b"\r"))
            continue
        out.append(b"\n" * len(held) + b"".join(held) + row)
        held = []
    if held:
        out.append(b"\n" * (len(held) - 1) + b"".join(held))
    return b"\n".join(out) + (b"\n" if ends and out else b"")


def test_unwrapped_reader_joins_rows_at_every_read_size() -> None:
    """Whatever the read sizes, full-width rows are joined as the reference joins them, and the number
    of lines does not change (line numbers stay those of the file)."""
    rnd = random.Random(11)
    for _ in range(4000):
        width = rnd.randint(3, 8)
        rows = [
            bytes(rnd.choice(b"ab\r") for _ in range(rnd.choice([width, width, rnd.randint(0, 2 * width)])))
            for _ in range(rnd.randint(0, 12))
        ]
        data = b"\n".join(rows) + rnd.choice([b"", b"\n"])
        reader, out = Unwrapped(io.BytesIO(data), width), b""
        while chunk := reader.read(rnd.randint(1, 9)):
            out += chunk
        assert out == _unwrapped_reference(data, width), (data, width, out)
        assert out.count(b"\n") == data.count(b"\n")


def test_row_readers_let_a_giant_line_through_in_parts() -> None:
    """A line longer than ROW_CAP is not held whole: its start is rewritten once, the rest goes through
    untouched, and the next line is read as a line again."""
    giant = b"12: " + b"x" * (ROW_CAP + 10) + b": 7 kept\n13: Traceback (most recent call last):\n14: tail"
    reader, out = Unnumbered(io.BytesIO(giant), b": "), b""
    while chunk := reader.read(65536):
        out += chunk
    assert out == b"x" * (ROW_CAP + 10) + b": 7 kept\nTraceback (most recent call last):\ntail"
