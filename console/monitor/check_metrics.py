"""``python -m console.monitor.check_metrics METRICS_JSON EXPR [EXPR...]``

The assertion language of NeMo-RL's tests/check_metrics.py (``data``, ``min``, ``max``, ``mean``,
``median``, ``ratio_above`` with the same argument meanings, plus ``len abs float int round`` and
``in``), evaluated by walking the ``ast`` instead of ``eval``: anything outside the language is
refused before any of it runs. Bounds keep every check cheap (``MAX_NODES`` nodes, ``MAX_DEPTH``
deep, integers of ``MAX_INT_BITS`` bits, ``round`` within ``MAX_NDIGITS``, ``CPU_LIMIT_S`` of CPU):
beyond them a check is refused (exit 2), never left to hang. Messages keep NeMo-RL's shapes
(``PASS: <check>``, ``FAIL: <check> (condition evaluated to False)``, ``(key not found: ...)``, ...).
Exit 0 when all pass, 1 when one fails, 2 for a refused or unparsable check.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import operator
import signal
import statistics
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from console.errors import ConsoleError

MAX_NODES = 400
MAX_DEPTH = 40
MAX_INT_BITS = 4096
MAX_NDIGITS = 400
CPU_LIMIT_S = 2.0


class RefusedExpression(ConsoleError):
    """The check is not in the metric-check language (exit 2)."""


@dataclass(slots=True)
class CheckResult:
    check: str
    passed: bool
    message: str
    value: Any = None
    refused: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------ helpers (NeMo-RL semantics)
def _values(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [float(v) for v in value.values()]
    if isinstance(value, list | tuple):
        return [float(v) for v in value]
    raise TypeError(f"expected a {{step: value}} mapping, got {type(value).__name__}")


def _extreme(pick: Callable[[Iterable[float]], float]) -> Callable[..., float]:
    """``min``/``max`` of a {step: value} mapping's values, or of the arguments."""
    return lambda *args: pick(_values(args[0]) if len(args) == 1 else (float(a) for a in args))


def _range_values(value: dict[str, Any], range_start: int, range_end: int) -> list[float]:
    """Steps are 1-indexed, ``range_end`` exclusive, 0 = through the last step; negative values
    count from the end; a resume offset (steps missing before the first logged one) is allowed."""
    if not isinstance(value, dict) or not value:
        raise TypeError("expected a non-empty {step: value} mapping")
    max_step = max(int(s) for s in value)
    offset = max_step - len(value)
    n = len(value)
    if range_start < 0:
        range_start += n + 1 + offset
    if range_end <= 0:
        range_end += n + 1 + offset
    return [float(v) for s, v in value.items() if range_start <= int(s) < range_end]


def _mean(value: Any, range_start: int = 1, range_end: int = 0, ignore_top_p: float = 0.0) -> float:
    vals = _range_values(value, range_start, range_end)
    if not 0.0 <= ignore_top_p <= 1.0:
        raise ValueError(f"ignore_top_p must be between 0.0 and 1.0, got {ignore_top_p}")
    if ignore_top_p > 0.0 and vals:
        vals = sorted(vals)
        cut = int(len(vals) * (1.0 - ignore_top_p))
        vals = vals[:cut] if cut > 0 else vals[:1]
    return statistics.mean(vals)


def _median(value: Any, range_start: int = 1, range_end: int = 0) -> float:
    return statistics.median(_range_values(value, range_start, range_end))


def _ratio_above(value: Any, threshold: float) -> float:
    vals = _values(value)
    if not vals:
        return 0.0
    return sum(1 for v in vals if v >= threshold) / len(vals)


def _round(x: Any, ndigits: int | None = None) -> Any:
    if ndigits is not None and (not isinstance(ndigits, int) or abs(ndigits) > MAX_NDIGITS):
        raise RefusedExpression(f"refused: round() ndigits must be an integer within +-{MAX_NDIGITS}")
    return round(x) if ndigits is None else round(x, ndigits)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": _extreme(min),
    "max": _extreme(max),
    "mean": _mean,
    "median": _median,
    "ratio_above": _ratio_above,
    "len": len,
    "abs": abs,
    "float": float,
    "int": int,
    "round": _round,
}
_KEYWORDS = {"range_start", "range_end", "ignore_top_p", "threshold", "ndigits"}

_CMP: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_BIN: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


# ------------------------------------------------------------------------------ the checker
def _refuse(node: ast.AST, why: str) -> RefusedExpression:
    col = getattr(node, "col_offset", None)
    where = f" at column {col + 1}" if col is not None else ""
    return RefusedExpression(f"refused: {why}{where}")


def validate(check: str) -> ast.Expression:
    """Parse and check that every node is in the language; raise RefusedExpression otherwise."""
    if len(check) > 2000:
        raise RefusedExpression("refused: expression longer than 2000 characters")
    try:
        tree = ast.parse(check.strip(), mode="eval")
    except SyntaxError as e:
        raise RefusedExpression(f"unparsable: {e.msg}") from None
    except (RecursionError, MemoryError):
        raise RefusedExpression(f"refused: nested deeper than {MAX_DEPTH} levels") from None
    _check_size(tree.body)
    _check(tree.body)
    return tree


def _check_size(root: ast.AST) -> None:
    """Node and depth caps, counted without recursion (a 5000-deep expression is refused, not a crash)."""
    count = 0
    stack: list[tuple[ast.AST, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise RefusedExpression(f"refused: more than {MAX_NODES} parts in one check")
        if depth > MAX_DEPTH:
            raise RefusedExpression(f"refused: nested deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _int_bits(x: Any) -> int:
    return abs(int(x)).bit_length() if isinstance(x, int) else 0


def _bounded(op: ast.operator, a: Any, b: Any) -> None:
    """Refuse an integer operation whose result would exceed ``MAX_INT_BITS`` (before computing it)."""
    if isinstance(op, ast.Pow) and isinstance(a, int) and isinstance(b, int) and b > 0:
        if abs(a) > 1 and (_int_bits(a) - 1) * b > MAX_INT_BITS:
            raise RefusedExpression(f"refused: ** result larger than {MAX_INT_BITS} bits")
    elif isinstance(op, ast.Pow) and isinstance(b, int | float) and abs(b) > 10_000:
        raise RefusedExpression("refused: exponent too large")
    elif (
        isinstance(op, ast.Mult)
        and isinstance(a, int)
        and isinstance(b, int)
        and _int_bits(a) + _int_bits(b) > MAX_INT_BITS
    ):
        raise RefusedExpression(f"refused: * result larger than {MAX_INT_BITS} bits")


def _check(node: ast.AST) -> None:  # noqa: C901 - one branch per allowed node kind
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool | int | float) or node.value is None:
            return
        if isinstance(node.value, str):
            if "__" in node.value:
                raise _refuse(node, "dunder strings are not allowed")
            return
        raise _refuse(node, f"constant of type {type(node.value).__name__} is not allowed")
    if isinstance(node, ast.Name):
        if node.id != "data":
            raise _refuse(node, f"name {node.id!r} is not allowed (only data and the check functions)")
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else type(node.func).__name__
            raise _refuse(node, f"call of {what!r} is not allowed (allowed: {', '.join(FUNCTIONS)})")
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise _refuse(a, "*args are not allowed")
            _check(a)
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in _KEYWORDS:
                raise _refuse(node, f"keyword {kw.arg!r} is not allowed")
            _check(kw.value)
        return
    if isinstance(node, ast.Subscript):
        if not (isinstance(node.value, ast.Name | ast.Subscript | ast.Call)):
            raise _refuse(node, "only data[...] subscripts are allowed")
        if isinstance(node.slice, ast.Slice):
            raise _refuse(node, "slices are not allowed")
    elif isinstance(node, ast.Compare):
        for op in node.ops:
            if type(op) not in _CMP:
                raise _refuse(node, f"comparison {type(op).__name__} is not allowed")
    elif isinstance(node, ast.BinOp | ast.UnaryOp) and not isinstance(
        node.op, (*_BIN, ast.USub, ast.UAdd, ast.Not)
    ):
        raise _refuse(node, f"operator {type(node.op).__name__} is not allowed")
    elif not isinstance(node, ast.BoolOp | ast.BinOp | ast.UnaryOp):
        raise _refuse(node, f"{type(node).__name__} is not allowed")
    for child in ast.iter_child_nodes(node):  # operands, not the operators (checked above)
        if not isinstance(child, ast.operator | ast.cmpop | ast.boolop | ast.unaryop | ast.expr_context):
            _check(child)


def _eval(node: ast.AST, data: Any) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return data
    if isinstance(node, ast.Subscript):
        return _eval(node.value, data)[_eval(node.slice, data)]
    if isinstance(node, ast.Compare):
        left = _eval(node.left, data)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, data)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        result: Any = None
        for v in node.values:
            result = _eval(v, data)
            if isinstance(node.op, ast.And) and not result:
                return result
            if isinstance(node.op, ast.Or) and result:
                return result
        return result
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, data), _eval(node.right, data)
        if not all(isinstance(x, int | float) for x in (a, b)):
            raise TypeError(f"arithmetic needs numbers, got {type(a).__name__} and {type(b).__name__}")
        _bounded(node.op, a, b)
        result = _BIN[type(node.op)](a, b)
        if isinstance(result, int) and _int_bits(result) > MAX_INT_BITS:
            raise RefusedExpression(f"refused: integer larger than {MAX_INT_BITS} bits")
        return result
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, data)
        if isinstance(node.op, ast.Not):
            return not v
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.Call):
        fn = FUNCTIONS[node.func.id]  # type: ignore[attr-defined]
        args = [_eval(a, data) for a in node.args]
        # validate() allows only named keywords (no ``**mapping``)
        kwargs = {str(kw.arg): _eval(kw.value, data) for kw in node.keywords}
        return fn(*args, **kwargs)
    raise RefusedExpression(f"refused: {type(node).__name__}")  # unreachable after validate()


@contextlib.contextmanager
def _cpu_limit(seconds: float) -> Iterator[None]:
    """Raise RefusedExpression after ``seconds`` of CPU time (ITIMER_VIRTUAL), main thread only."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def fire(_signum: int, _frame: object) -> None:
        raise RefusedExpression(f"refused: the check used more than {seconds:g} s of CPU")

    previous = signal.signal(signal.SIGVTALRM, fire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous or signal.SIG_DFL)


def _value_expr(check: str) -> str:
    """The 'Value' column: the left side, split like check_metrics.py does."""
    return check.split(">")[0].split("<")[0].split("==")[0].strip()


def evaluate_check(data: Any, check: str) -> CheckResult:
    """One check -> CheckResult. A refused check has ``refused=True`` and never runs."""
    try:
        tree = validate(check)
        try:
            value_tree: ast.Expression | None = validate(_value_expr(check))
        except RefusedExpression:
            value_tree = None  # e.g. "x != 1" splits into "x !": no separate value, as upstream
        with _cpu_limit(CPU_LIMIT_S):
            value = _eval(value_tree.body, data) if value_tree is not None else None
            result = _eval(tree.body, data)
    except RefusedExpression as e:
        return CheckResult(check, False, f"REFUSED: {check} ({e})", None, refused=True)
    except KeyError as e:
        return CheckResult(check, False, f"FAIL: {check} (key not found: {e})")
    except IndexError as e:
        return CheckResult(check, False, f"FAIL: {check} (index error: {e})")
    except Exception as e:  # noqa: BLE001 - any evaluation error is a FAIL with its message
        return CheckResult(check, False, f"FAIL: {check} (error: {e})")
    if result:
        return CheckResult(check, True, f"PASS: {check}", value)
    return CheckResult(check, False, f"FAIL: {check} (condition evaluated to False)", value)


def evaluate_checks(data: Any, exprs: list[str]) -> list[CheckResult]:
    return [evaluate_check(data, e) for e in exprs]


def render_table(results: list[CheckResult], width: int = 300) -> str:
    """The "Metric Checks" table (Status | Check | Value | Message) as plain text."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Metric Checks")
    for col in ("Status", "Check", "Value", "Message"):
        table.add_column(col)
    for r in results:
        status = "PASS" if r.passed else ("REFUSED" if r.refused else "FAIL")
        detail = "" if r.passed else r.message.split(": ", 1)[1]
        table.add_row(status, r.check, "N/A" if r.value is None else str(r.value), detail)
    console = Console(width=width, no_color=True, force_terminal=False, highlight=False)
    with console.capture() as cap:
        console.print(table)
    return cap.get()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m console.monitor.check_metrics",
        description="Check conditions against a metrics JSON file",
    )
    ap.add_argument("json_file", help="metrics.json ({tag: {step: value}})")
    ap.add_argument("checks", nargs="+", help="conditions, e.g. 'max(data[\"train/loss\"]) < 1.5'")
    ap.add_argument("--table-width", type=int, default=None)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    try:
        with open(args.json_file, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as e:
        print(f"Error: cannot read {args.json_file}: {e}", file=sys.stderr)
        return 1
    results = evaluate_checks(data, args.checks)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], default=str))
    else:
        print(render_table(results, args.table_width or 300), end="")
        for r in results:
            print(r.message + ("" if r.value is None else f" [value: {r.value}]"))
    if any(r.refused for r in results):
        return 2
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
