"""The same real log, pasted or collected the ways people do, triages the same.

Logs reach triage with a tag in front of every line: a CI or ``kubectl logs --timestamps`` time, a
markdown quote, ``srun --label`` rank numbers, pdsh/DeepSpeed host names, mpirun ``--tag-output``;
or indented as a whole. Each form is applied to every real fixture: verdict, class and rule must
not move.
"""

from __future__ import annotations

import io
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from console.triage.scan import Dedented, paste_indent
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
IPYTHON_UNREAD = {"hub_load_cut_traceback", "cancel_sigkill_handler"}


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
