"""Literal strings a regex cannot match without: a cheap, exact "cannot match" test.

``required(pattern)`` reads a compiled pattern's syntax tree and returns a query, an AND/OR tree of
literal strings that every text the pattern can match somewhere in must contain. When the query is
false for a text, ``pattern.search`` would find nothing there, so it need not run. The query only
ever *under*-approximates what a match needs (anything it cannot reason about counts as "no
requirement"), so a true query says nothing and the regex has to run.

A text the query is false for is also one the regex cannot match any *substring* of: that is what
lets triage test a whole cleaned line instead of the part after the process prefixes.

Case-insensitive patterns (``(?i)`` anywhere) compare lowercased ASCII literals with ``fold(text)``:
the text lowercased, with the four non-ASCII characters that such a regex matches to ASCII letters
(the Kelvin sign, the long s, the dotted and the dotless i) turned into those letters first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:  # typeshed types the regex parser under its pre-3.11 names only
    import sre_constants as _c
    import sre_parse as _p
else:  # Python >= 3.11 (requires-python) names it re._parser
    import re._constants as _c
    import re._parser as _p

# A query: True (no requirement), a literal string, ("and", [q...]) or ("or", [q...]).
Query: TypeAlias = "Literal[True] | str | tuple[str, list[Query]]"
MIN_FACTOR = 2  # one-character factors filter nothing worth the test
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT} | (
    {_c.POSSESSIVE_REPEAT} if hasattr(_c, "POSSESSIVE_REPEAT") else set()
)
_GROUPS = {_c.SUBPATTERN} | ({_c.ATOMIC_GROUP} if hasattr(_c, "ATOMIC_GROUP") else set())


# The only non-ASCII characters that a case-insensitive pattern matches to ASCII letters (checked over
# every code point by tests/test_triage_fastpath.py); str.lower() alone misses two of them.
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
FOLD_SPECIALS = tuple(ch.encode() for ch in ("\u0130", "\u0131", "\u017f", "\u212a"))


def fold(text: str) -> str:
    """``text`` lowercased so that an ASCII literal occurs in it wherever a case-insensitive regex
    sees it (the few special characters included)."""
    return text.lower() if text.isascii() else text.translate(_FOLD).lower()


@dataclass(frozen=True)
class Factors:
    query: Query
    ignorecase: bool
    test: Callable[[str], bool] = field(compare=False, repr=False, default=lambda _s: True)
    # strings of which at least one occurs (in the folded text when ignorecase) wherever the query is
    # true; None when there is no such short list
    keys: tuple[str, ...] | None = None

    def may_match(self, text: str, folded: str | None = None) -> bool:
        """False only when the pattern cannot match anywhere in ``text`` (``folded``: ``fold(text)``)."""
        if self.query is True:
            return True
        if self.ignorecase:
            return self.test(folded if folded is not None else fold(text))
        return self.test(text)


def query_keys(q: Query, given: Iterable[str] = ()) -> list[str] | None:
    """Strings at least one of which a text must hold for ``q`` to be true (None: no such list).

    A string inside one of ``given`` (say, the literal that selected the rule) tells nothing about a
    text that holds it: it counts as no requirement.
    """
    given = tuple(given)
    if q is True:
        return None
    if isinstance(q, str):
        return None if any(q in g for g in given) else [q]
    op, parts = q
    if op == "or":
        out: list[str] = []
        for p in parts:
            k = query_keys(p, given)
            if k is None:
                return None
            out.extend(k)
        return out

    def rank(k: list[str]) -> tuple[bool, int, int]:  # a key holding a given string is there with it: last
        return not any(g in x for x in k for g in given), min(map(len, k)), -len(k)

    best: list[str] | None = None
    for p in parts:  # any one conjunct will do: the one with the longest shortest string
        k = query_keys(p, given)
        if k is not None and (best is None or rank(k) > rank(best)):
            best = k
    return best


_DIGIT_FIRST = [b"%d" % d for d in range(10)] + [bytes([b]) for b in range(0x80, 0xC0)]  # last byte
_DIGIT_SECOND = [b"%d" % d for d in range(10)] + [bytes([b]) for b in range(0xC2, 0xF5)]  # first byte


def _one_char(op: Any, av: Any) -> tuple[list[bytes], list[bytes]] | None:
    """(last, first) UTF-8 bytes, lowercased, of the character an item matches when it is exactly one
    character: an ASCII literal, a class of those and digits (``\\d``: non-ASCII ones too), or a repeat
    of such an item at least once (its first and last characters are of the class)."""
    if op in _REPEATS and av[0] >= 1 and len(av[2]) == 1:
        return _one_char(*av[2][0])
    items = [(op, av)] if op is _c.LITERAL else av if op is _c.IN else []
    last: list[bytes] = []
    first: list[bytes] = []
    for iop, iav in items:
        if iop is _c.LITERAL and iav < 128:
            last.append(chr(iav).lower().encode())
            first.append(last[-1])
        elif iop is _c.CATEGORY and iav is _c.CATEGORY_DIGIT:
            last += _DIGIT_FIRST
            first += _DIGIT_SECOND
        else:
            return None
    return (last, first) if items else None


def pair_keys(pattern: re.Pattern[str]) -> list[bytes] | None:
    """Two-byte strings one of which the lowercased UTF-8 of a text holds wherever ``pattern`` matches in
    it: the first two consecutive items of its top-level sequence that each match one character (see
    ``_one_char``); None when it has no such items or ignores case."""
    if pattern.flags & re.IGNORECASE:
        return None
    prev = None
    for op, av in _p.parse(pattern.pattern, pattern.flags).data:
        cur = _one_char(op, av)
        if prev is not None and cur is not None:
            return sorted({a + b for a in prev[0] for b in cur[1]})
        prev = cur
    return None


def evaluate(q: Query, text: str) -> bool:
    """The query's value for ``text`` (the reference for the compiled test)."""
    if q is True:
        return True
    if isinstance(q, str):
        return q in text
    op, parts = q
    if op == "and":
        return all(evaluate(p, text) for p in parts)
    return any(evaluate(p, text) for p in parts)


def _expr(q: Query) -> str:
    if q is True:
        return "True"
    if isinstance(q, str):
        return f"({q!r} in s)"
    op, parts = q
    return "(" + f" {op} ".join(_expr(p) for p in parts) + ")"


def compile_query(q: Query) -> Callable[[str], bool]:
    """The query as one Python expression over the text ``s`` (a few ``in`` tests, no calls)."""
    # the code is built from string literals written with repr(), nothing else
    test: Callable[[str], bool] = eval(f"lambda s: {_expr(q)}", {"__builtins__": {}})  # noqa: S307
    return test


def _and(parts: list[Query]) -> Query:
    parts = [p for p in parts if p is not True]
    if not parts:
        return True
    return parts[0] if len(parts) == 1 else ("and", parts)


def _or(parts: list[Query]) -> Query:
    if not parts or any(p is True for p in parts):
        return True
    return parts[0] if len(parts) == 1 else ("or", parts)


class _Reader:
    def __init__(self, ignorecase: bool) -> None:
        self.ignorecase = ignorecase
        self.uses_ignorecase = ignorecase

    def literal_char(self, code: int) -> str | None:
        ch = chr(code)
        if self.ignorecase and not ch.isascii():
            return None  # a case-insensitive non-ASCII char may match other characters: no factor
        return ch.lower() if self.ignorecase else ch

    def seq(self, items: Any) -> tuple[Query, str | None]:
        """(query, the exact string when the sequence is one fixed literal, else None)."""
        parts: list[Query] = []
        run = ""
        exact = True

        def flush() -> None:
            nonlocal run
            if len(run) >= MIN_FACTOR:
                parts.append(run)
            run = ""

        for op, av in items:
            single = op is _c.IN and len(av) == 1 and av[0][0] is _c.LITERAL  # [x]: the literal x
            if op is _c.LITERAL or single:
                ch = self.literal_char(av[0][1] if single else av)
                if ch is None:
                    flush()
                    exact = False
                else:
                    run += ch
                continue
            if op in _GROUPS:
                sub = av[-1]
                q: Query
                lit: str | None
                if op is _c.SUBPATTERN and (av[1] | av[2]) & re.IGNORECASE and not self.ignorecase:
                    self.uses_ignorecase = (
                        True  # a scoped (?i:...): the caller reads it all again ignoring case
                    )
                    q, lit = True, None
                else:
                    q, lit = self.seq(sub)
                if lit is not None:
                    run += lit
                    continue
                flush()
                exact = False
                parts.append(q)
                continue
            if op is _c.BRANCH:
                flush()
                exact = False
                parts.append(_or([self.seq(alt)[0] for alt in av[1]]))
                continue
            if op in _REPEATS:
                lo, _hi, sub = av
                flush()
                exact = False
                if lo >= 1:
                    parts.append(self.seq(sub)[0])
                continue
            # anchors, lookarounds, classes, ANY, backreferences, conditionals: no requirement
            flush()
            exact = False
        if exact:
            return (run if len(run) >= MIN_FACTOR else True), run
        flush()
        return _and(parts), None


def required(pattern: re.Pattern[str]) -> Factors:
    """The literal factors ``pattern`` needs (see the module docstring)."""
    return _required(pattern.pattern, pattern.flags)


@lru_cache(maxsize=1024)
def _required(source: str | bytes, flags: int) -> Factors:
    pattern = re.compile(source, flags)
    if not isinstance(pattern.pattern, str):
        return Factors(True, False)
    ignorecase = bool(pattern.flags & re.IGNORECASE)
    try:
        tree = _p.parse(pattern.pattern, pattern.flags)
    except Exception:  # noqa: BLE001 - an unreadable tree only means "no factors"
        return Factors(True, False)
    reader = _Reader(ignorecase)
    query, _ = reader.seq(tree)
    if reader.uses_ignorecase and not ignorecase:
        # a scoped flag: read it again case-insensitively throughout (weaker, still necessary)
        reader = _Reader(True)
        query, _ = reader.seq(tree)
    keys = query_keys(query)
    return Factors(
        query, reader.uses_ignorecase, compile_query(query), tuple(dict.fromkeys(keys)) if keys else None
    )
