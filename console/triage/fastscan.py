"""Feed the triage engine only the lines that can change its state: live and post-mortem.

``TriageEngine.feed`` is the reference: the line-by-line path puts every line through it. Most lines
of an RL log cannot change anything in it: no literal at all, only an *inert* one (Ray's
``[repeated 3x across cluster]``), or only rule literals whose rules' regexes cannot match the line
(a ``DTensorPolicyWorker`` actor prefix, ``429`` inside a number, ``venv`` in a path).
``LineGate`` tells those apart exactly, from ``TriageEngine.literal_roles`` and the literal factors
and keys of each rule's regex (``console/triage/regexfactors.py``); every other line (markers,
traceback structure, exception lines, metrics, a rule that may match) still goes through ``feed``,
and so does every line while the framework is still being detected, and, while a traceback is
open, every line of its process prefix or with a guard word. The engine ends in the same state as if
it had been fed every line, so live findings and post-mortem triage JSON are the same
(``tests/test_triage_fastpath.py`` checks it).

``GatedFeed`` is the live path (the supervisor, one line at a time). ``FastFileScanner`` is the
post-mortem path. Per 16 MiB chunk of raw bytes (read, not mapped: memory stays bounded):
1. one Aho-Corasick pass finds the literals feed() acts on, guard words, and rule-only literals;
2. lines holding only rule-only or glog error-level literals go through one more automaton (``line_keys``:
   the keys of their rules or of the error-level regex, on the lowercased line stripped of ANSI codes);
   the few with a key are kept;
3. only the kept lines are sliced, decoded and cleaned, in one pass over the hits; a line with a
   literal feed() acts on goes straight to it (``feed_light`` with the literals found, when they all
   only select markers or metrics and the line is clean UTF-8), the others through
   ``LineGate.needs_feed`` first (decided once per text: logs repeat lines verbatim).
Cleaning can *create* a literal (an ANSI colour code or a NUL byte inside it:
``\x1b[35mValueError\x1b[0m:``), so the first automaton also looks for every proper prefix of a
literal followed by ESC, and every line with a NUL byte is a candidate.
"""

from __future__ import annotations

import gc
import re
import string
from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any, Protocol

from console.monitor.text import clean_line
from console.triage.engine import ERROR_LEVEL_LITERALS, STRUCTURE_LITERALS, WARNING_LITERAL, TriageEngine
from console.triage.model import FindingRecord
from console.triage.regexfactors import FOLD_SPECIALS, Factors, fold, pair_keys, query_keys, required


class ByteReader(Protocol):
    """What the scanners read a log through: a binary file, or a reader wrapping one (``paste.Dedented``)."""

    def read(self, size: int = -1, /) -> bytes: ...


CHUNK = 16 << 20
LINE_CAP = 64 << 10  # a giant line is classified on its first 64 KiB
_NUL = re.compile(b"\x00")

Finder = Callable[[Any], list[int]]


def top_alternatives(pattern: re.Pattern[str]) -> list[re.Pattern[str]]:
    """The top-level alternatives of ``pattern``, each compiled alone (with its flags): ``pattern`` matches
    somewhere in a text exactly when one of them does. ``[pattern]`` when it has none, or inline flags."""
    src = pattern.pattern
    if src.startswith("(?") and not src.startswith(("(?:", "(?P", "(?=", "(?!", "(?<")):
        return [pattern]  # global inline flags: they must stay with every part
    parts, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if src[i + 1 : i + 2] == "^":
                i += 1
            if src[i + 1 : i + 2] == "]":  # a literal "]" first in the class
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(src[start:i])
            start = i + 1
        i += 1
    parts.append(src[start:])
    if len(parts) < 2:
        return [pattern]
    try:
        return [re.compile(p, pattern.flags) for p in parts]
    except re.error:
        return [pattern]


def esc_variants(literals: Iterable[bytes]) -> set[bytes]:
    """Every proper prefix of each literal followed by ESC: where an ANSI code may split a literal."""
    out: set[bytes] = set()
    for lit in literals:
        for i in range(1, len(lit)):
            out.add(lit[:i] + b"\x1b")
    return out


def make_finder(literals: Iterable[str], split_by_ansi: bool = True) -> tuple[Finder, str]:
    """A function giving start offsets of candidate hits in a bytes chunk, and its name.

    With ``split_by_ansi`` a hit is also any place where an ANSI code may split one of the literals
    (see the module docstring), so that no line whose *cleaned* text holds a literal is missed.
    """
    find, name = _hit_finder(sorted({lit.encode() for lit in literals}), split_by_ansi)[:2]

    def starts(chunk: Any) -> list[int]:
        return [h[1] for h in find(chunk)]

    return starts, name


def _hit_finder(
    pats: list[bytes], split_by_ansi: bool
) -> tuple[Callable[[Any], list[tuple[int, int, int]]], str, list[bytes] | None]:
    """(finder of (pattern index, start, end) hits, its name, the patterns by index or None)."""
    try:
        import ahocorasick_rs  # optional accelerator (Rust Aho-Corasick)
    except ImportError:
        # without the automaton every line with an ESC is a candidate (exact, slower on coloured logs)
        alts = sorted(pats, key=len, reverse=True) + ([b"\x1b"] if split_by_ansi else [])
        rx = re.compile(b"|".join(re.escape(p) for p in alts))

        def find_re(chunk: Any) -> list[tuple[int, int, int]]:
            return [(-1, m.start(), m.end()) for m in rx.finditer(chunk)]

        return find_re, "regex", None
    allp = pats + sorted(esc_variants(pats) - set(pats)) if split_by_ansi else list(pats)
    ac = ahocorasick_rs.BytesAhoCorasick(allp, implementation=ahocorasick_rs.Implementation.DFA)

    def find_ac(chunk: Any) -> list[tuple[int, int, int]]:
        # overlapping: a line's rule literal must not hide another literal of it
        return ac.find_matches_as_indexes(chunk, overlapping=True)

    return find_ac, "aho-corasick", allp


def marker_only_literals(engine: TriageEngine) -> frozenset[str]:
    """Literals of feed() that only select markers (no rule, no traceback structure, no metric): a
    marker changes the engine's state only where its regex matches."""
    rule_lits = {lit for r in engine.cat.rules for lit in r.literals}
    marker_lits = {lit for m in engine.cat.markers for lit in m.literals}
    return frozenset(marker_lits - rule_lits - set(STRUCTURE_LITERALS) - engine.literal_roles()["inert"])


class LineGate:
    """Decides whether ``engine.feed`` can change anything for one line (outside a traceback).

    ``needs_feed(text)`` takes the text exactly as ``feed`` will look at it (``text_for_gate``); False
    means that ``feed`` would only count the line.
    """

    def __init__(self, engine: TriageEngine) -> None:
        roles = engine.literal_roles()
        self.engine = engine
        self.roles = roles
        self._decided: dict[str, bool] = {}  # text -> needs_feed(text), for repeated lines
        self._engine_lits = frozenset(engine.literals)
        # literals that select markers and nothing else: like rule-only literals, a line holding only
        # those (and no guard word) changes nothing unless one of their markers' regexes may match it
        marker_only = marker_only_literals(engine)
        # error-level literals (log levels, glog "[E ... file.cc:12]") that do nothing else: feed() acts on
        # them only where its error-level regex matches (engine.error_level_line)
        rule_lits = {lit for r in engine.cat.rules for lit in r.literals}
        marker_lits = {lit for m in engine.cat.markers for lit in m.literals}
        self._level_only = (frozenset(ERROR_LEVEL_LITERALS) & roles["feed"]) - rule_lits - marker_lits
        # that regex, one alternative at a time behind its literal factors (the whole is slow on long lines)
        self._level_parts = [(rx, required(rx)) for rx in top_alternatives(engine.error_level_re)]
        # the Python-warning literal: feed() acts on it only where a warning's head ("<file>:<n>: <Category>Warning: ")
        # matches (engine.warning_head_line); other "Warning: " lines (NCCL's, a logger's) change nothing
        self._warning_only = frozenset({WARNING_LITERAL} & roles["feed"]) - rule_lits - marker_lits
        self._sure = roles["feed"] - marker_only - self._level_only - self._warning_only  # straight to feed()
        self._marker_only = marker_only
        self._must = self._sure | roles["guards"]
        self._rule_lits = roles["rule"] | marker_only
        factors: dict[int, Factors] = {}
        self._factors_by_lit: dict[str, tuple[Factors, ...]] = {}
        self._rules_by_lit: dict[str, tuple[int, ...]] = {}
        for i, rule in enumerate(engine.cat.rules):
            for lit in rule.literals:
                if lit in self._rule_lits:
                    f = factors.setdefault(i, required(rule.regex))
                    self._factors_by_lit[lit] = (*self._factors_by_lit.get(lit, ()), f)
                    self._rules_by_lit[lit] = (*self._rules_by_lit.get(lit, ()), i)
        for m in engine.cat.markers:
            mf = required(m.regex)
            for lit in m.literals:
                if lit in marker_only:
                    self._factors_by_lit[lit] = (*self._factors_by_lit.get(lit, ()), mf)
        lits = sorted(self._engine_lits | roles["guards"])
        self._ac: Any = None
        try:
            import ahocorasick_rs

            self._ac = ahocorasick_rs.AhoCorasick(lits, matchkind=ahocorasick_rs.MatchKind.Standard)
        except ImportError:
            self._rx = re.compile("|".join(re.escape(x) for x in sorted(lits, key=len, reverse=True)))
            self._lits = lits
        # rule-only literals whose rules all have keys (see regexfactors.Factors.keys): a line holding only
        # such literals matters only when one of those keys is in it (line_keys)
        self._keys: dict[str, set[bytes]] = {}  # literal -> the keys of its rules
        for lit in self._rule_lits:
            # the keys of each rule this literal selects, knowing only that the literal is in the line
            ks = [
                query_keys(factors[i].query, [lit.lower() if factors[i].ignorecase else lit])
                for i in self._rules_by_lit.get(lit, ())
            ]
            if ks and all(ks):
                self._keys[lit] = {k.lower().encode() for kk in ks for k in kk or ()}
        # so are the error-level literals that do nothing else, when every alternative of the regex has keys
        level_keys = [query_keys(f.query) or pair_keys(rx) for rx, f in self._level_parts]
        if all(level_keys):
            level = {k.lower().encode() if isinstance(k, str) else k for kk in level_keys for k in kk or ()}
            self._keys.update(dict.fromkeys(self._level_only, level))
        # a warning's head has a category name right before "Warning: " (UserWarning, FutureWarning, ...): one of
        # these keys is in any line that warning_head_line can pass ("] Warning: " of NCCL or a logger is not)
        for lit in self._warning_only:
            self._keys[lit] = {
                f"{c}{lit}".lower().encode() for c in string.ascii_lowercase + string.digits + "_"
            }
        self._keyed = set(self._keys) if self._ac is not None else set()
        self._key_acs: dict[frozenset[str], Any] = {}  # the automaton of the keys of a set of literals

    def hit_finder(self) -> tuple[Callable[[Any], list[tuple[int, int, int]]], list[Any], str]:
        """(finder of hits in a raw chunk, the kind of each pattern index, the finder's name).

        A kind is True for a literal feed() acts on, None when a hit makes its line a candidate for
        ``needs_feed``, else a keyed rule-only literal: hits of those alone make the line a candidate
        only when ``line_keys`` finds one of their rules' keys in it too.
        """
        pats = [x.encode() for x in self.chunk_literals()]
        find, name, allp = _hit_finder(pats, True)
        keyed = {lit.encode(): lit for lit in self._keyed}
        sure = {lit.encode() for lit in self._sure | self._marker_only}
        # True: a literal feed() acts on, or one that only selects markers (the line goes straight to feed():
        # such lines are nearly always progress banners that needs_feed would pass); the literal when it is a keyed
        # rule-only literal; None for anything else (an ANSI-split prefix, a guard word, an unkeyed rule
        # literal: needs_feed decides)
        kinds = [True if p in sure else keyed.get(p) for p in allp or ()]
        # the literal of each pattern that only selects markers or the metric watcher (engine.feed_light)
        light = {lit.encode(): lit for lit in self.engine.light_literals}
        self.hit_lights = [light.get(p) for p in allp or ()]
        return find, kinds, name

    def chunk_literals(self) -> list[str]:
        """The literals a chunk prefilter must find (inert ones cannot make a line matter)."""
        return sorted(self._engine_lits - self.roles["inert"] | self.roles["guards"])

    def _present(self, text: str) -> set[str]:
        if self._ac is not None:
            return set(self._ac.find_matches_as_strings(text, overlapping=True))
        if not self._rx.search(text):
            return set()
        return {lit for lit in self._lits if lit in text}

    def needs_feed_open(self, text: str) -> bool:
        """``needs_feed`` while the engine has open tracebacks: a line of a prefix that has one open, a
        guard word (an exception line starts a traceback or is a bare exception even with no literal),
        else as ``needs_feed``."""
        present = self._present(text)
        if not present.isdisjoint(self.roles["guards"]):
            return True
        if self.engine.line_prefix(text) in self.engine.open_prefixes():
            return True
        return self._needs(present, text)

    def needs_feed(self, text: str) -> bool:
        # a pure function of the text: a line printed again and again is decided once
        known = self._decided.get(text)
        if known is not None:
            return known
        need = self._needs(self._present(text), text)
        if len(text) <= 1024:
            if len(self._decided) >= 512:
                self._decided.clear()
            self._decided[text] = need
        return need

    def _needs(self, present: set[str], text: str) -> bool:
        if not present or present.isdisjoint(self._engine_lits):
            return False  # no literal of feed(): it returns at once
        if not present.isdisjoint(self._must):
            return True
        if not present.isdisjoint(self._level_only) and self._error_level(text):
            return True
        if not present.isdisjoint(self._warning_only) and self.engine.warning_head_line(text):
            return True
        folded: str | None = None
        for lit in present & self._rule_lits:
            for f in self._factors_by_lit.get(lit, ()):
                if f.ignorecase and folded is None:
                    folded = fold(text)
                if f.may_match(text, folded):
                    return True
        return False  # only inert literals, and rule literals whose regexes cannot match

    def _error_level(self, text: str) -> bool:
        """``engine.error_level_line(text)``, by the alternatives of its regex."""
        if "[repeated" in text:
            text = self.engine.without_repeat_count(text)
        folded: str | None = None
        for rx, f in self._level_parts:
            if f.ignorecase and folded is None:
                folded = fold(text)
            if f.may_match(text, folded) and rx.search(text) is not None:
                return True
        return False

    def line_keys(self, raw: bytes, lits: list[str]) -> bool:
        """Whether a key of the rules of the literals ``lits`` found in the raw line may be in the text
        feed() makes of it.

        That text is the line decoded, cut at a CR redraw and stripped of ANSI codes (twice:
        ``clean_line`` and feed's own). Stripping the codes from the raw bytes twice keeps every CR
        segment, so whatever the text holds, the stripped bytes hold too; lowercasing them covers
        case-insensitive keys, except for the four non-ASCII characters that ``fold`` maps to ASCII,
        which are keys themselves.
        """
        if 27 in raw:  # ESC
            raw = _ANSI_B.sub(b"", raw)
            if 27 in raw:
                raw = _ANSI_B.sub(b"", raw)
        lits_set = frozenset(lits)
        ac = self._key_acs.get(lits_set)
        if ac is None:
            import ahocorasick_rs

            if len(self._key_acs) >= 256:
                self._key_acs.clear()
            pats = sorted({k for lit in lits_set for k in self._keys[lit]} | set(FOLD_SPECIALS))
            ac = ahocorasick_rs.BytesAhoCorasick(pats, implementation=ahocorasick_rs.Implementation.DFA)
            self._key_acs[lits_set] = ac
        return bool(ac.find_matches_as_indexes(raw.lower()))


# ANSI codes as console.monitor.text strips them, on bytes, never across a CR (see line_keys).
_ANSI_B = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\r\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def text_for_gate(text: str) -> str:
    """The text feed() classifies (it cleans again a line that still holds ESC or CR)."""
    return clean_line(text) if "\x1b" in text or "\r" in text else text


class GatedFeed:
    """The live path: ``feed(lineno, text)`` with the results of ``engine.feed``, skipping lines that
    cannot change the engine (they still count for ``last_line``)."""

    def __init__(self, engine: TriageEngine, gate: LineGate | None = None) -> None:
        self.engine = engine
        self.gate = gate or LineGate(engine)
        self.fed = 0
        self.skipped = 0

    def feed(self, lineno: int, text: str) -> list[FindingRecord]:
        engine = self.engine
        if engine.detects_at(lineno):
            need = True
        elif engine.wants_more:
            need = self.gate.needs_feed_open(text_for_gate(text))
        else:
            need = self.gate.needs_feed(text_for_gate(text))
        if need:
            self.fed += 1
            return engine.feed(lineno, text)
        self.skipped += 1
        engine.skip_to(lineno)
        return []


def line_text(raw: bytes) -> str:
    """A raw physical line (no newline) as both triage paths feed it: first 64 KiB, no final CR, cleaned."""
    if len(raw) > LINE_CAP:
        raw = raw[:LINE_CAP]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if 27 not in raw and 13 not in raw and 0 not in raw:  # ESC, CR, NUL
        return raw.decode("utf-8", errors="replace")  # what clean_line leaves of it (no newline in raw)
    return clean_line(raw)


class FastFileScanner:
    """Post-mortem: feed one file's candidate lines (see the module docstring) through the engine."""

    def __init__(
        self,
        engine: TriageEngine,
        gate: LineGate,
        finder: tuple[Callable[[Any], list[tuple[int, int, int]]], list[Any], str] | None = None,
    ) -> None:
        self.engine = engine
        self.gate = gate
        self.find, kinds, _ = finder or gate.hit_finder()
        lights = getattr(gate, "hit_lights", [])
        # one more entry, None, for the NUL hits (pattern index -1)
        self.kinds: list[Any] = [*kinds, None]
        self.lights: list[str | None] = [
            *(lights if len(lights) == len(kinds) else [None] * len(kinds)),
            None,
        ]
        self.inert = sorted(gate.roles["inert"])
        self.lineno = 1  # number of the line starting at the current chunk's offset 0
        self.fed = 0
        self.candidates = 0

    def _feed(self, lineno: int, raw: bytes, detecting: bool) -> None:
        """A line read while the framework is detected (always fed) or a traceback is open."""
        text = line_text(raw)
        if detecting or self.gate.needs_feed_open(text_for_gate(text)):
            self.fed += 1
            self.engine.feed(lineno, text)
        else:
            self.engine.skip_to(lineno)

    def _hits(self, buf: bytes, end: int) -> list[tuple[int, int, int]]:
        """The automaton's hits in ``buf[:end]`` (plus every NUL byte, pattern index -1), by position."""
        hits = self.find(memoryview(buf)[:end] if end < len(buf) else buf)
        if buf.find(b"\x00", 0, end) >= 0:  # removing NULs can join a literal: those lines are candidates
            hits = sorted(
                [*hits, *((-1, m.start(), m.end()) for m in _NUL.finditer(buf, 0, end))], key=itemgetter(1)
            )
        return hits

    def _walk(self, buf: bytes, pos: int, lineno: int, end: int) -> tuple[int, int]:
        """Line by line from ``pos`` while a traceback is open or the framework is being detected; returns
        where that stopped (the position and number of the next line)."""
        engine, cap = self.engine, LINE_CAP
        detecting = engine.detects_at(lineno)
        while pos < end:
            if detecting and not engine.detects_at(lineno):
                detecting = False
                engine.skip_to(lineno)  # past the detection window: as feed() would note it
            if not (detecting or engine.wants_more):
                break
            nl = buf.find(b"\n", pos, end)
            self._feed(lineno, buf[pos : pos + cap] if nl - pos > cap else buf[pos:nl], detecting)
            pos, lineno = nl + 1, lineno + 1
        return pos, lineno

    def _line(self, raw: bytes, lineno: int, sure: bool, light: list[str] | None) -> None:
        """One line that may matter (no traceback open, past detection): see the module docstring."""
        if raw[-1:] == b"\r":
            raw = raw[:-1]
        if 27 in raw or 13 in raw or 0 in raw:  # ESC, CR, NUL (a byte value is found by memchr, faster)
            text = clean_line(raw)
        else:
            try:
                text = raw.decode()
            except UnicodeDecodeError:
                text = raw.decode("utf-8", errors="replace")
                light = None
            if light is not None:
                # the literals found are exactly those in the text, unless an inert one is there too
                for lit in self.inert:
                    if lit in text:
                        break
                else:
                    self.fed += 1
                    self.engine.feed_light(lineno, text, set(light))
                    return
        if sure:  # feed() is the judge: a literal it acts on may still be gone from the cleaned text
            self.fed += 1
            self.engine.feed(lineno, text)
        else:
            self.candidates += 1
            if self.gate.needs_feed(text_for_gate(text)):
                self.fed += 1
                self.engine.feed(lineno, text)

    def chunk(self, buf: bytes, end: int | None = None) -> None:
        """Process ``buf[:end]``, which ends with a newline: one pass over the automaton's hits, a line at a
        time (all the hits of a line decide what it is), and every line while a traceback is open."""
        end = len(buf) if end is None else end
        engine = self.engine
        tbs, chained, noise = engine.open_state()  # wants_more is: any of them
        kinds, lights, cap = self.kinds, self.lights, LINE_CAP
        rfind, find, count = buf.rfind, buf.find, buf.count
        line_keys, do_line = self.gate.line_keys, self._line
        pos, lineno = 0, self.lineno  # the next line not read yet
        if tbs or chained or noise or engine.detects_at(lineno):
            pos, lineno = self._walk(buf, pos, lineno, end)
        nl = -1  # the end of the line being read (its newline), -1 for none
        start = ln = 0
        sure = maybe = False
        lits: list[str] | None = None
        light: list[str] | None = None
        for idx, hit, _ in self._hits(buf, end):
            if hit < nl:  # another hit in the same line
                if sure and light is None:
                    continue
                kind = kinds[idx]
                if kind is True:
                    sure = True
                    if light is not None:
                        lit = lights[idx]
                        if lit is None:
                            light = None
                        else:
                            light.append(lit)
                    continue
                light = None
                if kind is None:
                    maybe = True
                elif lits is None:
                    lits = [kind]
                else:
                    lits.append(kind)
                continue
            if nl >= 0:  # the line before is complete
                raw = buf[start : start + cap] if nl - start > cap else buf[start:nl]
                pos, lineno = nl + 1, ln + 1
                nl = -1
                if sure or maybe or line_keys(raw, lits):  # type: ignore[arg-type]
                    do_line(raw, ln, sure, light if sure and not maybe and not lits else None)
                    if tbs or chained or noise:
                        pos, lineno = self._walk(buf, pos, lineno, end)
            if hit < pos:
                continue  # in a line read line by line already
            start = rfind(b"\n", pos, hit) + 1
            ln = lineno
            if start > pos:
                ln += count(b"\n", pos, start)
            else:
                start = pos
            nl = find(b"\n", hit, end)
            kind = kinds[idx]
            sure = kind is True
            maybe = kind is None
            lits = None if sure or maybe else [kind]
            light = None
            if sure:
                lit = lights[idx]
                if lit is not None:
                    light = [lit]
        if nl >= 0:
            raw = buf[start : start + cap] if nl - start > cap else buf[start:nl]
            pos, lineno = nl + 1, ln + 1
            if sure or maybe or line_keys(raw, lits):  # type: ignore[arg-type]
                do_line(raw, ln, sure, light if sure and not maybe and not lits else None)
                if tbs or chained or noise:
                    pos, lineno = self._walk(buf, pos, lineno, end)
        self.lineno = lineno + count(b"\n", pos, end)  # (pos, lineno): the next line not read

    def scan(self, fh: ByteReader, chunk_size: int = CHUNK) -> int:
        """Read ``fh`` to its end; return the number of lines (the last one may lack its newline)."""
        # the chunk passes make many short-lived tuples and no reference cycles: the cycle collector would
        # walk every chunk's hit list again and again for nothing (reference counting frees them)
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._scan(fh, chunk_size)
        finally:
            if collecting:
                gc.enable()

    def _scan(self, fh: ByteReader, chunk_size: int) -> int:
        carry = b""
        giant: bytes | None = None  # the head of a line longer than a chunk, whose rest is being skipped
        while True:
            data = fh.read(chunk_size)
            if not data:
                break
            if giant is not None:
                nl = data.find(b"\n")
                if nl < 0:
                    continue
                self.chunk(giant + b"\n")
                giant, data = None, data[nl + 1 :]
            buf = carry + data if carry else data
            cut = buf.rfind(b"\n")
            if cut < 0:
                if len(buf) >= max(chunk_size, 2 * LINE_CAP):  # only its first 64 KiB will be read
                    giant, carry = buf[:LINE_CAP], b""
                else:
                    carry = buf
                continue
            self.chunk(buf, cut + 1)
            carry = buf[cut + 1 :]
        if giant is not None:
            self.chunk(giant + b"\n")
        elif carry:
            self.chunk(carry + b"\n")
        lines = self.lineno - 1
        self.engine.skip_to(lines)
        return lines


def scan_file(
    engine: TriageEngine,
    fh: ByteReader,
    gate: LineGate | None = None,
    finder: tuple[Callable[[Any], list[tuple[int, int, int]]], list[Any], str] | None = None,
) -> FastFileScanner:
    gate = gate or LineGate(engine)
    scanner = FastFileScanner(engine, gate, finder)
    scanner.scan(fh)
    return scanner
