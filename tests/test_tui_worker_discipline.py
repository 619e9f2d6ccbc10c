"""The TUI's threads are Textual workers that only post messages: read from the source, so a worker
that writes its screen's attributes (or a raw thread) is caught before it races the UI thread."""

from __future__ import annotations

import ast
from pathlib import Path

TUI = Path(__file__).resolve().parent.parent / "console" / "tui"
MUTATORS = {"append", "extend", "extendleft", "update", "clear", "pop", "popleft", "add", "setdefault"}


def _is_worker(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Name) and target.id == "work":
            return True
    return False


def _self_attr(node: ast.AST) -> str | None:
    """``self.x`` (or ``self.x[...]``, ``self.x.y``) -> ``x``."""
    while isinstance(node, ast.Subscript | ast.Attribute):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return node.attr
        node = node.value
    return None


def worker_writes(source: str) -> list[str]:
    """``worker: self.attr`` for every write to the object's state inside a ``@work`` function."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or not _is_worker(fn):
            continue
        for node in ast.walk(fn):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in MUTATORS
            ):
                targets = [node.func.value]
            for target in targets:
                attr = _self_attr(target)
                if attr is not None:
                    found.append(f"{fn.name}: self.{attr} (line {node.lineno})")
    return sorted(found)


def test_workers_never_write_the_state_of_their_screen_or_app() -> None:
    bad = {p.name: w for p in sorted(TUI.rglob("*.py")) if (w := worker_writes(p.read_text()))}
    assert bad == {}


def test_no_raw_threads_in_the_tui() -> None:
    """Background work is a Textual worker (cancellable, waited for by tests), never threading.Thread."""
    raw = [p.name for p in TUI.rglob("*.py") if "threading.Thread(" in p.read_text()]
    assert raw == []


def test_the_checks_catch_what_they_look_for() -> None:
    source = """
class S:
    @work(thread=True)
    def watch(self):
        self._label = "x"
        self._pending.extend([1])
        self.count += 1
        local = []
        local.append(1)

    def on_message(self, m):
        self._label = m.label
"""
    assert worker_writes(source) == [
        "watch: self._label (line 5)",
        "watch: self._pending (line 6)",
        "watch: self.count (line 7)",
    ]
