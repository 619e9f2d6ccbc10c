"""The triage engine: classify a log line by line (live) and give the triage JSON of DESIGN.md.

Feed cleaned lines (``console.monitor.text.clean_line``) with their line numbers; ``feed`` returns the
findings first seen on that line (for live ``finding`` events); ``result`` gives the whole verdict.

How the root cause is chosen is in ``console/triage/rootcause.py``; the rules are data
(``console/catalog/triage_rules.toml``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from console.monitor.text import RAY_PREFIX, RAY_PREFIX_RE, clean_line
from console.redact import redact_text
from console.triage import rootcause
from console.triage.finding import Finding
from console.triage.metricwatch import LITERALS as METRIC_LITERALS
from console.triage.metricwatch import Anomaly, MetricWatch
from console.triage.model import FindingRecord, TriageResult
from console.triage.rules import NOISE_CLASS, Catalog, ExceptionRule, Rule, default_catalog
from console.triage.stall import CUT_NOTE

FRAMEWORKS = ("nemo-rl", "verl", "demo")
EVIDENCE_MAX = 400
CONTEXT_WINDOW = 5000  # lines a context marker (e.g. "CUDA graph") stays in force

# Traceback structure (Python's own format, not domain knowledge).
TRACEBACK_START = "Traceback (most recent call last)"
FRAME_LITERAL = 'File "'
IPY8_FRAME_LITERALS = (
    "File /",
    "File ~",
)  # IPython 8's frame, "File /x/y.py:12, in f(a)" (see _IPY8_FRAME_RE)
CHAIN_LITERALS = ("During handling of the above exception", "The above exception was the direct cause")
# TensorFlow 1's session re-raises an op's error as "InvalidArgumentError (see above for traceback): <msg>": the
# words between an exception's type and its message (the exception-line patterns here and in paste.py allow them).
TF1_REFERRAL = "(see above for traceback)"
# Exception lines (``Type: message``) and failed imports are read by structure, not by a rule each.
EXCEPTION_LITERALS = (
    "Error:",
    "Error(",
    "Exception:",
    "Exception(",
    "Interrupt",
    "Error: ",
    "Exit:",
    "AssertionError",
    f"{TF1_REFERRAL}:",  # a bare TensorFlow 1 exception line ("NotFoundError (see above for traceback): ...")
)
IMPORT_LITERALS = ("No module named", "ModuleNotFoundError", "ImportError")
# A Python warning as the warnings module prints it: "<file>:<line>: <Category>Warning: <message>", the
# message going on over the next lines when it holds newlines, then the source line, indented.
WARNING_LITERAL = "Warning: "
_WARNING_HEAD_RE = re.compile(r":\d+\)?: (?:[A-Za-z_][\w.]*\.)?[A-Z]\w*Warning: ")
# glog-style error/fatal levels of the C++ parts: PyTorch c10 "[E704 13:48:58.26 file.cpp:12]" / "[F file.cpp:12]",
# Ray's "[2024-05-01 10:00:00,000 E 1234 5678]"
GLOG_LEVEL_LITERALS = ("[E", "[F", " E ", " F ", " C ", ".cc:", ".cpp:")
STRUCTURE_LITERALS = (
    TRACEBACK_START,
    FRAME_LITERAL,
    *IPY8_FRAME_LITERALS,
    ": in ",
    "ERROR",
    "FATAL",
    "CRITICAL",
    "Check failed",
    *GLOG_LEVEL_LITERALS,
    *CHAIN_LITERALS,
    *EXCEPTION_LITERALS,
    *IMPORT_LITERALS,
    *METRIC_LITERALS,
    WARNING_LITERAL,
)
_FRAME_RE = re.compile(
    r'^\s*(?:File "(?P<path>[^"]*)", line \d+(?:, in (?P<func>[\w<>.]+))?'
    r"|(?P<ppath>[\w./-]+\.py):\d+: in (?P<pfunc>[\w<>.]+)$)"
)  # python / pytest frames
# IPython / Jupyter frames, read only inside an open traceback (its header line opened it): "File
# /x/y.py:12, in f(a)" (IPython 8), "~/x/y.py in f(a)" (IPython 7), Colab's linked form of it
# "[/usr/lib/x/y.py](https://localhost:8080/#) in f(a)", the cell's own frame; rich's boxed traceback (typer, accelerate,
# DeepSpeed scripts) "│ /x/y.py:498 in f   │"; and the numbered source lines
# they quote, "----> 3 call()" / "--> 905     return x" (the others, the context, are indented).
_IPY_FRAME_RE = re.compile(
    r"^(?:File (?P<path>[~/.\w][^,]*?\.py\w?):\d+, in |[~/][^ ]*\.(?:py|pyx|pxi) in |<ipython-input-[\w-]+> in "
    r"|\[[~/][^\]]*\.(?:py|pyx|pxi)\]\([^)]*\) in "
    r"|Cell In\[\d+\], line \d+|Input In \[\d+\], in |│ [~/.\w][^ ]*?\.py:\d+ in )(?P<func>[\w<>.]+)?"
)
# IPython 8's frame form alone, "File /x/y.py:12, in f(a)": unlike the others it cannot be a log line, so it opens
# a traceback pasted without its header, as a Python frame ('File "/x/y.py", line 12, in f') does
_IPY8_FRAME_RE = re.compile(r"^File (?P<path>[~/.\w][^,]*?\.py\w?):\d+, in (?P<func>[\w<>.]+)\(")
_IPY_SOURCE_RE = re.compile(r"-+> \d+ ")
_INLINE_FRAME_RE = re.compile(
    r'(?<= )File "[^"]+", line \d+, in (?P<func>[\w<>.]+)'
)  # frames in a flattened line
# where a flattened traceback's exception line starts (a dotted type ending like an exception's)
_INLINE_EXC_START_RE = re.compile(r"\s(?=(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b)")
# a cut traceback's last frame that raises: "raise EntryNotFoundError(", "raise OSError(f'No such file: {p}')"
_RAISE_RE = re.compile(r"^raise (?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?:\((?P<msg>.*))?$")
RAISED = "raised_in_cut_traceback"  # rule id suffix of a finding read from that raise statement
# IPython / Jupyter open a traceback with the exception's type on the header line, padded to a column:
# "OutOfMemoryError                          Traceback (most recent call last)"
_IPY_HEADER_RE = re.compile(
    r"^\s*(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)\s{2,}Traceback \(most recent call last\)"
)
IPY_HEADER = "type_in_ipython_header"  # rule id suffix of a finding read from that header
IN_WARNING = "in_warning"  # rule id suffix of a finding in a Python warning's message
LIBRARY_CALLER = "library_caller"  # rule id suffix: an installed package made the failing call
STACK_CALLER = "bridge_stack_caller"  # rule id suffix: the Megatron / Bridge / NeMo-RL stack made it
# (the name may be quoted twice in a paste that marks it as inline code: No module named `'nemo.collections'`)
_MODULE_RE = re.compile(r"""No module named [`'"]{0,2}(?P<mod>[\w.]+)""")
# A frame of a signal handler entered from a blocking call: the process was interrupted by a signal.
_SIGNAL_HANDLER_RE = re.compile(r"(?i)^(?:\w*sig\w*_handler|signal_handler|_?handle_?sig\w*|_?on_signal\w*)$")
_BLOCKING_RE = re.compile(
    r"(?:\bsleep\(|\.wait\(|waitpid\(|\.join\(|select\(|\.poll\(|\.acquire\(|\bget\(|"
    r"^(?:_?wait|_try_wait|sleep|select|poll|join|acquire|waitpid)$)"
)
# glog's FATAL severity (the ROCm runtime, Ray's C++ core, XLA): "F agent.cpp:245] ...", "F0918 11:04:47.636 1579
# agent.cpp:245] ..."; glog aborts the process right after such a line.
_GLOG_FATAL_RE = re.compile(r"^F(?:\d{4} [\d:.]+ +\d+)? +[\w./-]+\.(?:cc|cpp|cxx):\d+\] ")
# A line logged at glog's WARNING severity ("W0215 01:53:44.58 2825 dso_loader.cc:64] ...", TensorFlow's "2023-02-12
# 02:34:13.661201: W tensorflow/.../dso_loader.cc:64] Could not load dynamic library 'libnvinfer.so.7'"): the library
# only warned and went on, so what the line names counts as a cause only if the run then dies (as in a Python warning).
# (Not TensorFlow's "OP_REQUIRES failed at nccl_communicator.cc:116 : Internal: ...", nor older TensorFlow's op
# failures that its op_kernel.cc logs, "W tensorflow/core/framework/op_kernel.cc:973] Resource exhausted: OOM when
# allocating tensor ...": an op's error, logged at WARNING as it is raised to the caller.)
_GLOG_WARNING_RE = re.compile(
    r"(?:^|: )W(?:\d{4} [\d:.]+ +\d+)? +(?![\w./-]*\bop_kernel\.cc:)[\w./-]+\.(?:cc|cpp|cxx|h):\d+\] (?!OP_REQUIRES failed)"
)
# A line logged at a warning level, its level word near its start: "Warning:  ... Using Python fallback",
# "WARNING: ...", "[WARN] ...", "2024-01-02 10:00:00 | WARNING | ...". A failed import it reports was only warned
# about (apex's "Original ImportError was: ModuleNotFoundError(...)" under its Python fallback).
_WARNING_LEVEL_RE = re.compile(r"^.{0,40}?(?:^|[\s\[|(])(?:WARNING|WARN|Warning)(?:\]|:|\s+\||\))")
# A failed import a library caught and reported, going on without it: xFormers' "A matching Triton is not available,
# some optimizations will not be enabled. / Error caught was: No module named 'triton'", apex's "Original ImportError
# was: ...".
_CAUGHT_IMPORT_RE = re.compile(r"\b(?:[Ee]rror caught was|[Ee]xception caught was|Original ImportError was):")


def _import_only_warned(body: str) -> bool:
    """The line reports a failed import as a warning, or as one that was caught and gone on from."""
    return _WARNING_LEVEL_RE.match(body) is not None or _CAUGHT_IMPORT_RE.search(body) is not None


EXIT_CODE = "fatal_exit_code"  # the fatal marker of a process's non-zero exit code
MIXED_ENVIRONMENTS = "mixed_environments"  # rule id suffix: a missing package in frames of two environments
GLOG_FATAL = "glog_fatal"  # rule id suffix of a transient rule's line logged at that severity
# `python -m X` run by the system interpreter, naming itself: "/usr/bin/python3: No module named X".
_SYSTEM_PYTHON_RE = re.compile(
    r"(?:(?:^|[\s:])/(?:usr/(?:local/)?)?bin/python[\d.]*"  # a POSIX system interpreter
    # a Windows global install (not a venv's Scripts, a conda env or an app's embedded interpreter)
    r"|(?:^|\s)(?![A-Za-z]:\\[^:]*(?:venv|\\envs\\|conda|embed|\\Scripts\\))[A-Za-z]:\\(?:[^\\:]+\\){0,6}"
    r"python(?:\d[\d.]*)?\.exe)"
    r": (?:No module named |Error while finding module specification)"
)
# A frame of an installed package's own code ("site-packages/ts/model_service_worker.py"): group "pkg".
_INSTALLED_PACKAGE_FRAME_RE = re.compile(r"[/\\](?:site|dist)-packages[/\\](?P<pkg>\w+)[/\\]")
# pytest's header when a test module fails to import (its error follows as "E   ImportError: ...")
PYTEST_IMPORT_HEADER = "ImportError while importing test module"
# pytest's marker of the error lines of a failed test ("E   AttributeError: ..."): the line after it is read
_PYTEST_ERROR_RE = re.compile(r"E {3,}(?=\S)")
# mpirun --tag-output's tag again inside a line: one rank's write split by another's ("Error[1,19]<stderr>:: ...")
_MPI_TAG_RE = re.compile(r"\[\d+,\d+\]<(?:stdout|stderr)>: ?")
# The prefix Ray puts on a line an actor or task printed: "(MegatronPolicyWorker pid=35477, ip=10.0.0.12)".
_RAY_ACTOR_PREFIX_RE = re.compile(r"\(\w+ pid=\d+")
# Exception types whose name carries none of the usual endings (huggingface_hub's OfflineModeIsEnabled).
UNSUFFIXED_EXCEPTIONS = ("OfflineModeIsEnabled",)
_EXC_RE = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Iteration|Failure)|Exception"
    + "".join(f"|{name}" for name in UNSUFFIXED_EXCEPTIONS)
    + r"))"
    r"(?:\((?P<inner>\w+)\))?(?: " + re.escape(TF1_REFERRAL) + r")?(?::\s?(?P<msg>.*))?$"
)
# An exception as its repr, on a line of its own or after an error's lead-in: Hydra's "Error in call to target
# 'pkg.Model':" over 'TypeError("Model.__init__() got an unexpected keyword argument \'x\'")', spaCy's "Encountered
# exception:" over "OverflowError('Invalid Nan value when encoding double',)", Optuna's "Trial 2 failed because of
# the following error: ValueError('...')". Read as the "Type: message" line it stands for.
_EXC_REPR_RE = re.compile(
    r"^(?:.{0,200}?\b(?:[Ee]rror|[Ee]xception|failed|[Ff]ailure)\b[^:]{0,60}:\s*)?"
    r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt))\((?P<q>[\"'])(?P<msg>.*?)(?P=q),?\)\s*[.;]?\s*$"
)


def _exception_repr(body: str) -> re.Match[str] | None:
    """The "Type: message" line an exception's repr in ``body`` stands for (see _EXC_REPR_RE), or None."""
    m = _EXC_REPR_RE.match(body.strip())
    return None if m is None else _EXC_RE.match(f"{m.group('type')}: {m.group('msg')}")


# After a traceback's frames, Python prints the exception at column 0 whatever its type is named
# (pyarrow's ArrowInvalid, triton's OutOfResources, torch._dynamo's BackendCompilerFailed): read there
# only, any dotted CamelCase name (not a log level in capitals) followed by ":" or the line's end.
_EXC_AFTER_FRAMES_RE = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z](?=\w*[a-z])\w*)(?:\((?P<inner>\w+)\))?(?::\s?(?P<msg>.*))?$"
)
# The head of a log record at error level whose message is an exception line (an exception logged with
# logger.exception / logger.error and no traceback pasted): vLLM's "ERROR 03-02 10:11:12 [core.py:700] ",
# DeepSpeed's "[2024-05-01 10:00:00,123] [ERROR] [engine.py:12:fn] ", logging's default "ERROR:root:".
_LOGGED_ERROR_HEAD_RE = re.compile(
    r"^(?:\[[^\]]{0,40}\]\s*)?\[?(?:ERROR|CRITICAL|FATAL)\]?"
    r"(?::[\w.]+:|\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)?\s*(?:\[[\w./-]+:\d+(?::\w+)?\]\s*)?"
)
# A log record's bracketed time ("[2025-03-04 10:11:12,345] ", logging's "[%(asctime)s]"), then maybe a process
# prefix: an exception line after it is read as one (a paste with no traceback around it).
_TIME_HEAD_RE = re.compile(r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\]\s+")
_RAY_PREFIX_IN_LINE_RE = re.compile(r"(?<=\s)" + RAY_PREFIX)
_REPEATED_RE = re.compile(r"\s*\[repeated (\d+)x across cluster\]\s*$")
# Process prefixes that interleave several processes' output (Ray actors, torchrun ranks, compose...).
_PREFIX_RE = re.compile(
    "|".join(
        f"(?:{p})"
        for p in (
            RAY_PREFIX_RE.pattern,
            r"\[(?:default|rank)\d+\]:\s?",
            r"\[\d+\] (?=\[)",
            r"[\w.-]+-\d+\s+\| ",
            r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [\w./-]+:\d+\] ",
            r"\d{4}-\d\d-\d\d[ T][\d:,.]+ \| \w+ \| \w+ \| ",
            r"\[(?:[a-z0-9_-]+ )?\d+step\] ",
            # pasted or collected logs: a CI/kubectl timestamp, a markdown quote, a host or srun --label
            # tag ("worker-0: ", "gpu01: ", "10.0.0.1: ", "3: "), mpirun --tag-output
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ",
            r">(?: |$)",
            r"(?:[A-Za-z][\w.-]*?\d|\d{1,3}(?:\.\d{1,3}){3}|\d{1,4}): ",
            r"\[\d+,\d+\]<(?:stdout|stderr)>: ?",
        )
    )
)
_RAY_WRAPPERS = ("RayTaskError", "RayActorError")
# An error-level log line (log level or glog/Ray "Check failed"): the components table may name it.
ERROR_LEVEL_LITERALS = ("ERROR", "FATAL", "CRITICAL", "Check failed", *GLOG_LEVEL_LITERALS)
_ERROR_LEVEL_RE = re.compile(
    r"(?:^|[\s\[|(])(?:ERROR|FATAL|CRITICAL)(?:[\s\]|:)]|$)|\bCheck failed\b"
    r"|\[[EF](?:\d{3,4} [\d:.]+)? [\w./-]+:\d+\]|\[\d{4}-\d\d-\d\d [\d:,.]+ [EFC] \d+ \d+\]"
    r"|(?:^|\s)[EF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+(?:\s+\d+)? [\w./-]+:\d+\]"
)
_METRIC_SET = frozenset(METRIC_LITERALS)
DETECT_LINES = 5000  # framework evidence is looked for in the first lines only
REPEAT_LINES = 512  # repeated lines remembered (see TriageEngine._remember)
REPEAT_MAX_LEN = 1024  # longer lines are not remembered
# Words a line must hold for the exception-line regex (_EXC_RE) or the pytest frame form of _FRAME_RE to match:
# with the literals, what line-skipping scanners look for (see TriageEngine.literal_roles).
EXCEPTION_WORDS = ("Error", "Exception", "Exit", "Interrupt", "Iteration", "Failure", *UNSUFFIXED_EXCEPTIONS)
PYTEST_FRAME_LITERAL = ": in "
_EXCEPTION_WORD_RE = re.compile("|".join(EXCEPTION_WORDS))  # any(w in text for w in EXCEPTION_WORDS), faster
_EXCEPTION_WORD_SET = frozenset(EXCEPTION_WORDS)


def _glog_warning(body: str) -> bool:
    """The line is logged at glog's WARNING severity (see _GLOG_WARNING_RE)."""
    return "W" in body and _GLOG_WARNING_RE.search(body) is not None


def _line_automaton(literals: list[str]) -> Any:
    try:
        import ahocorasick_rs
    except ImportError:
        return None
    return ahocorasick_rs.AhoCorasick(literals, matchkind=ahocorasick_rs.MatchKind.Standard)


def split_prefix(text: str) -> tuple[str, str]:
    """(prefix, body): strip process prefixes so interleaved processes keep separate state."""
    parts: list[str] = []
    m = _PREFIX_RE.match(text)
    while m is not None and m.end() > 0:
        parts.append(m.group(0).strip())
        text = text[m.end() :]
        m = _PREFIX_RE.match(text)
    return " ".join(parts), text


def drop_inner_mpi_tags(text: str) -> str:
    """The line without mpirun tags after its first character (a rank's write split by another's)."""
    return text[:1] + _MPI_TAG_RE.sub("", text[1:])


def evidence_text(text: str) -> str:
    text = redact_text(text.strip())
    return text if len(text) <= EVIDENCE_MAX else text[: EVIDENCE_MAX - 3] + "..."


@dataclass
class _Traceback:
    start: int
    frames: list[str] = field(default_factory=list)
    funcs: list[str] = field(default_factory=list)  # function of each frame
    sources: list[str] = field(default_factory=list)  # quoted source line of each frame ("" if none)
    noise: bool = False
    chained: bool = False
    classified: bool = False
    exc_line: int | None = None
    exc_text: str | None = None
    exc: re.Match[str] | None = None  # exc_text read as an exception line: its type, wrapped type, message
    wrapper: str | None = None  # "RayTaskError(X)": the inner exception type X
    indent: str = ""  # the header's indentation (an indented paste): stripped from the lines that follow
    frame_indent: int = 0  # the last frame line's indentation: the source line it quotes sits deeper
    header_type: str | None = None  # IPython's header names the type: "OutOfMemoryError    Traceback (...)"
    header_text: str = ""


def _indent_width(text: str) -> int:
    """How many spaces/tabs ``text`` starts with."""
    return len(text) - len(text.lstrip(" \t"))


def _frames_with_sources(tb: _Traceback, last: int) -> str:
    """The deepest ``last`` frames (all when 0), each followed by the source line quoted under it ("" if none)."""
    start = len(tb.frames) - last if last else 0
    return "\n".join(
        f"{frame}\n{tb.sources[i] if i < len(tb.sources) else ''}"
        for i, frame in enumerate(tb.frames)
        if i >= start
    )


class TriageEngine:
    """Line-by-line classifier. ``framework`` "unknown" (or None) means: detect it from the log."""

    def __init__(self, framework: str | None = "unknown", catalog: Catalog | None = None) -> None:
        self.cat = catalog or default_catalog()
        self.framework = framework if framework in FRAMEWORKS else "unknown"
        self._detect = self.framework == "unknown"
        self._fw_literals = [
            (fw, lit) for fw in ("demo", "verl", "nemo-rl") for lit in self.cat.frameworks.get(fw, ())
        ]
        literals = sorted({*self.cat.literals(), *STRUCTURE_LITERALS, "[repeated"})
        self._prefilter = re.compile("|".join(re.escape(x) for x in sorted(literals, key=len, reverse=True)))
        # literal -> indices of the rules / markers that list it (candidate selection per line)
        self._rules_by_lit: dict[str, list[int]] = {}
        for i, rule in enumerate(self.cat.rules):
            for lit in rule.literals:
                self._rules_by_lit.setdefault(lit, []).append(i)
        self._markers_by_lit: dict[str, list[int]] = {}
        for i, m in enumerate(self.cat.markers):
            for lit in m.literals:
                self._markers_by_lit.setdefault(lit, []).append(i)
        self._markers_of = {lit: tuple(sorted(set(ix))) for lit, ix in self._markers_by_lit.items()}
        self._markers_of_set: dict[frozenset[str], tuple[int, ...]] = {}  # the same for several literals
        self.literals = literals  # every literal feed() looks for (see literal_roles)
        self._light_literals = self._markers_and_metrics_only()
        # the literals and the exception words in one automaton (see _present_words)
        self._line_ac = _line_automaton(sorted({*literals, *EXCEPTION_WORDS}))
        self._literal_set = frozenset(literals)
        self._rule_only = self.literal_roles()["rule"]
        # literals of a line whose outcome is a function of its text (a warning's head too: see _remember)
        self._repeatable = self._rule_only | {WARNING_LITERAL}
        # text -> (framework, the rule it matched, the process prefix when the line is a Python warning's head)
        self._repeats: dict[str, tuple[str, Rule | None, str | None]] = {}
        self._findings: dict[tuple[str, str], Finding] = {}
        self._order: list[Finding] = []
        self._tbs: dict[str, _Traceback] = {}
        self._last_closed: dict[str, _Traceback] = {}
        self._chain_pending: set[str] = set()
        self._noise_pending: set[str] = set()
        self._warning_heads: dict[str, int] = {}  # process prefix -> line of its last Python warning's head
        self._last_warning_head = 0  # the line of the last warning's head of any process
        self._metrics = MetricWatch()
        self.context: dict[str, int] = {}  # tag -> last line seen
        self.context_first: dict[str, int] = {}  # tag -> first line seen
        self.evidence: dict[str, str] = {}
        self.fatal: list[tuple[int, str, str]] = []  # (line, marker id, text): the run died here
        self.root_exception: tuple[int, str] | None = None  # the first causal exception line seen
        self.step: int | None = None
        self.total: int | None = None
        self.completed_line: int | None = None
        self.exiting_line: int | None = None  # the process started to exit (shutdown-only warnings)
        self.last_line = 0
        self.source: str | None = None
        self.tail: list[tuple[int, str]] | None = None  # a finished log's last lines (stall.py), never live

    # ------------------------------------------------------------------ public API

    @property
    def open_traceback(self) -> bool:
        """A traceback still open at the end of what was fed (an excerpt that ends inside a crash)."""
        return any(not tb.noise for tb in self._tbs.values())

    @property
    def wants_more(self) -> bool:
        """True while a traceback is open: a scanner must feed the following lines too."""
        return bool(self._tbs or self._chain_pending or self._noise_pending)

    def open_state(self) -> tuple[dict[str, Any], set[str], set[str]]:
        """The containers ``wants_more`` looks at (the same objects for the engine's life): a scanner's
        loop can test them without a call per line."""
        return self._tbs, self._chain_pending, self._noise_pending

    def feed(self, lineno: int, text: str) -> list[FindingRecord]:
        if "\x1b" in text or "\r" in text:
            text = clean_line(text)
        if "]<std" in text:
            text = drop_inner_mpi_tags(text)
        if lineno > self.last_line:
            self.last_line = lineno
        if self._detect and lineno > DETECT_LINES:
            self._detect = False
        busy = bool(self._tbs or self._chain_pending or self._noise_pending)
        if not busy and text in self._repeats and self._repeated_line(lineno, text):
            return []
        present, exc_word = self._present_words(text)
        if not busy and (not present or present <= _METRIC_SET):
            if self._detect:
                self._detect_framework(text)
            if present:  # a metrics line and nothing else: only the metric watcher needs it (fast path)
                return [f.to_dict() for f in self._metric_findings(lineno, text)]
            return []
        if not busy and present <= self._light_literals and not exc_word:
            return self._feed_markers_only(lineno, text, present)
        count = 1
        if "[repeated" in text:
            m = _REPEATED_RE.search(text)
            if m:
                count = int(m.group(1))
                text = text[: m.start()]
        if self._detect:
            self._detect_framework(text)
        # a line whose literals only select rules (no exception word): its outcome is a function of its text
        # while nothing is open, the framework is known and none of those rules needs a context
        repeatable = (
            not busy
            and not self._detect
            and len(text) <= REPEAT_MAX_LEN
            and present <= self._repeatable
            and count == 1
            and not exc_word
            and PYTEST_FRAME_LITERAL not in text
        )
        prefix, body = split_prefix(text)
        if body.startswith("E   ") and (pytest_e := _PYTEST_ERROR_RE.match(body)) is not None:
            body = body[pytest_e.end() :]  # pytest's error marker
        tb = self._tbs.get(prefix)
        stripped = ""
        if tb is not None and tb.indent and body.startswith(tb.indent):
            body, stripped = body[len(tb.indent) :], tb.indent
        new: list[Finding] = []
        self._structure(prefix, body, lineno, new, stripped)
        tb = self._tbs.get(prefix)
        # the line right after a Python warning's head, not its indented source line: the warning's
        # message goes on here ("RuntimeWarning: Failed to read commit hash:" / "No module named ..."),
        # and what it names was only warned about: it counts as a cause only if the run then dies
        in_warning = (
            tb is None and body[:1] not in (" ", "\t") and self._warning_heads.get(prefix) == lineno - 1
        )
        warning_head = WARNING_LITERAL in body and _WARNING_HEAD_RE.search(body) is not None
        if warning_head:
            self._warning_heads[prefix] = self._last_warning_head = lineno
        if (
            tb is not None
            and tb.frames
            and (
                (body[:1] in (" ", "\t") and _indent_width(body) > tb.frame_indent)
                or (body[:1] == "-" and _IPY_SOURCE_RE.match(body))
            )
            and not _FRAME_RE.match(body)
        ):
            if len(tb.sources) < len(tb.frames):
                tb.sources.append(body.strip())
            elif body[:1] == "-":  # IPython's arrow marks the frame's running line, not its context
                tb.sources[-1] = body.strip()
            return [f.to_dict() for f in new]  # a source line quoted by a traceback, not output
        self._markers(body, lineno, present)
        rule = self._match_rule(body, present, noise_only=bool(tb and tb.noise))
        if rule is not None:
            self._drop_benign_fatal(rule, lineno)
        if repeatable and not in_warning:
            self._remember(text, present, rule, prefix if warning_head else None)
        handled = rule is not None
        if rule is not None:
            if rule.cls == NOISE_CLASS and rule.id == "noise_exception_ignored_del":
                self._noise_pending.add(prefix)
            f = self._add(
                rule.cls,
                rule.verdict,
                lineno,
                body,
                rule.id,
                count,
                rule.soft,
                rule,
                upgrade=self._frame_upgrade(rule.cls, tb),
                in_warning=in_warning
                or (tb is None and rule.verdict != "Noise" and not rule.transient and _glog_warning(body)),
            )
            if f is not None:
                new.append(f)
            if tb is not None and rule.verdict != "Noise":
                tb.classified = True
        elif not (tb and tb.noise) and any(lit in body for lit in IMPORT_LITERALS):
            f = self._import_finding(prefix, body, lineno, tb)
            if f is not None and (in_warning or (tb is None and _import_only_warned(body))):
                f.rule, f.transient = f"{f.rule}+{IN_WARNING}", True
            if f is not None:
                handled = True
                added = self._add_finding(f, count)
                if added is not None:
                    new.append(added)
                if tb is not None:
                    tb.classified = True
        if (
            not handled
            and tb is None
            and not present.isdisjoint(ERROR_LEVEL_LITERALS)
            and _ERROR_LEVEL_RE.search(text)
            and not (rule and rule.verdict == "Noise")
        ):
            # the process prefix names who printed it, e.g. "(raylet)": part of what the components read
            f = self.component_finding(f"{prefix} {body}" if prefix else body, lineno)
            if f is not None:
                added = self._add_finding(f, count)
                if added is not None:
                    new.append(added)
        if any(lit in body for lit in METRIC_LITERALS):
            new += self._metric_findings(lineno, body)
        exc = _EXC_RE.match(body) if body[:1] not in (" ", "\t") else None
        if exc is None and tb is not None and tb.frames and body[:1] not in (" ", "\t", ""):
            exc = _EXC_AFTER_FRAMES_RE.match(body)
        if exc is None and tb is None and exc_word:
            exc = self._logged_exception(body, present) or _exception_repr(body)
        if tb is not None:
            if exc is not None:
                if rule is not None and rule.verdict == "Noise":
                    tb.noise = True  # the exception itself is shutdown noise ("sys.meta_path is None", ...)
                self._exception_line(prefix, tb, exc, lineno, body, new)
        elif exc is not None and exc.group("inner") and any(w in exc.group("type") for w in _RAY_WRAPPERS):
            # a Ray wrapper with no traceback header above it: the remote traceback follows
            self._tbs[prefix] = _Traceback(
                start=lineno, wrapper=exc.group("inner"), exc_line=lineno, exc_text=body, exc=exc
            )
        elif exc is not None and prefix not in self._noise_pending:
            self._bare_exception(exc, lineno, body, rule, handled, new)
        return [f.to_dict() for f in new]

    def trailing_metric_finding(self) -> Finding | None:
        """A finished log whose last grad-norm report, in its tail, turned NaN/Inf (see MetricWatch)."""
        a = self._metrics.trailing_nonfinite_grad()
        if a is None or not self.tail or a.line < self.tail[0][0]:
            return None
        a.evidence += f" ({CUT_NOTE})"
        return self._metric_finding(a, confidence=0.45)

    def _metric_finding(self, a: Anomaly, confidence: float) -> Finding:
        return Finding(
            "metric_failure",
            self.cat.classes["metric_failure"].verdict,
            a.line,
            evidence_text(a.evidence),
            f"metrics:{a.kind}",
            file=self.source,
            confidence=confidence,
            lines=a.lines,
        )

    def _metric_findings(self, lineno: int, body: str) -> list[Finding]:
        new: list[Finding] = []
        for a in self._metrics.feed(lineno, body):
            added = self._add_finding(self._metric_finding(a, confidence=0.75), 1)
            if added is not None:
                new.append(added)
        return new

    def note_hang(self, idle_s: float, lineno: int | None = None) -> FindingRecord:
        """The monitor saw no progress for ``idle_s`` seconds: record a ``hang`` finding."""
        line = lineno if lineno is not None else self.last_line
        f = self._add(
            "hang",
            self.cat.classes["hang"].verdict,
            line,
            f"no progress for {idle_s:.0f} s",
            "no_progress_timeout",
            1,
            False,
            None,
        )
        return (f or self._findings[("hang", "no_progress_timeout")]).to_dict()

    def note_cancel(
        self, reason: str = "cancelled from the console", lineno: int | None = None
    ) -> FindingRecord:
        """The user cancelled the run (rl-console's own cancel): the verdict is Cancelled, never Fail."""
        line = lineno if lineno is not None else self.last_line
        f = Finding(
            "cancelled",
            "Cancelled",
            line,
            evidence_text(reason),
            "console_cancel",
            file=self.source,
            confidence=1.0,
        )
        added = self._add_finding(f, 1)
        return (added or self._findings[("cancelled", "console_cancel")]).to_dict()

    def result(self, exit_code: int | None = None) -> TriageResult:
        """The triage JSON of DESIGN.md. Can be called repeatedly while lines are still fed."""
        findings = [copy.copy(f) for f in self._order]
        findings.extend(self._pending_traceback_findings(findings))
        self.context_upgrades(findings)
        return rootcause.decide(self, findings, exit_code)

    def context_upgrades(self, findings: list[Finding]) -> None:
        """Context weighs a finding wherever it stands (a graph capture named after the fault too); also
        the death that rootcause.decide adds when no rule explained it."""
        for m in self.cat.markers:
            if not m.upgrades or m.cls is None or m.tag not in self.context:
                continue
            near = (self.context_first[m.tag], self.context[m.tag])
            window = m.window or CONTEXT_WINDOW
            for f in findings:
                if f.cls in m.upgrades and any(abs(f.line - c) <= window for c in near):
                    f.also = [*f.also, f.cls]
                    f.cls, f.verdict = m.cls, self.cat.classes[m.cls].verdict
                    f.rule = f"{f.rule}+context:{m.tag}"
                    f.lines = sorted({*f.lines, *(c for c in near if abs(f.line - c) <= window)})
                    f.advice = f.remedy = None

    # ------------------------------------------------------------------ line-skipping scanners
    # console/triage/fastscan.py feeds only the lines that can change this engine's state. It relies on
    # literal_roles(): keep it true when feed() starts to use a literal (or a regex) differently.

    def literal_roles(self) -> dict[str, frozenset[str]]:
        """What each literal of ``self.literals`` can do on a line (not inside an open traceback):

        - ``inert``: nothing on its own ("[repeated" only carries a repeat count);
        - ``rule``: selects rules and nothing else: such a line matters only when one of those rules'
          regexes matches it;
        - ``feed``: anything else (markers, traceback structure, imports, metrics): feed the line;
        - ``guards``: not literals of feed(): words without which the exception-line and pytest-frame
          regexes cannot match; a line holding one of them and any literal must be fed.
        """
        rule_lits = {lit for r in self.cat.rules for lit in r.literals}
        marker_lits = {lit for m in self.cat.markers for lit in m.literals}
        inert = {".py:", "[repeated"} - rule_lits - marker_lits
        rule_only = rule_lits - marker_lits - set(STRUCTURE_LITERALS) - inert
        feed = set(self.literals) - inert - rule_only
        return {
            "inert": frozenset(inert),
            "rule": frozenset(rule_only),
            "feed": frozenset(feed),
            "guards": frozenset((*EXCEPTION_WORDS, PYTEST_FRAME_LITERAL)),
        }

    def error_level_line(self, text: str) -> bool:
        """feed()'s error-level test (``_ERROR_LEVEL_RE``) on a cleaned line, its repeat count cut off as
        feed() cuts it: a line whose only literals of feed() are ERROR_LEVEL_LITERALS (and no guard word)
        changes nothing unless this holds."""
        return _ERROR_LEVEL_RE.search(self.without_repeat_count(text)) is not None

    @staticmethod
    def warning_head_line(text: str) -> bool:
        """Whether a cleaned line may hold a Python warning's head, which feed() remembers (the next line
        may go on with its message): a line whose only literal of feed() is WARNING_LITERAL changes
        nothing unless this holds."""
        return WARNING_LITERAL in text and _WARNING_HEAD_RE.search(text) is not None

    @property
    def error_level_re(self) -> re.Pattern[str]:
        return _ERROR_LEVEL_RE

    @staticmethod
    def without_repeat_count(text: str) -> str:
        """The line as feed() reads it after cutting Ray's ``[repeated Nx across cluster]`` off."""
        if "[repeated" in text:
            m = _REPEATED_RE.search(text)
            if m:
                return text[: m.start()]
        return text

    def open_prefixes(self) -> set[str]:
        """The process prefixes with an open traceback (or one about to open): while there are some,
        feed() looks at every line, but a line of another prefix with no literal and no guard word
        (literal_roles) changes nothing."""
        return {*self._tbs, *self._chain_pending, *self._noise_pending}

    def line_prefix(self, text: str) -> str:
        """The process prefix feed() reads from a cleaned line."""
        if "[repeated" in text:
            m = _REPEATED_RE.search(text)
            if m:
                text = text[: m.start()]
        return split_prefix(text)[0]

    def detects_at(self, lineno: int) -> bool:
        """feed() still reads framework evidence from every line (literal or not) at ``lineno``."""
        return self._detect and lineno <= DETECT_LINES

    def skip_to(self, lineno: int) -> None:
        """Lines up to ``lineno`` were read and skipped: what feed() does with lines that cannot matter."""
        self.last_line = max(self.last_line, lineno)
        if self._detect and lineno > DETECT_LINES:
            self._detect = False

    # ------------------------------------------------------------------ cheap path for marker / metric lines
    # A line (outside a traceback) whose literals only select markers or the metric watcher, and with no
    # word the exception-line regex needs, can change nothing but the progress / context state and the
    # metric watcher: feed() would find no traceback structure (its literals are absent), no rule (no
    # rule literal), no import, no error level (ERROR_LEVEL_LITERALS absent) and no exception line.

    def _markers_and_metrics_only(self) -> frozenset[str]:
        """Literals that select markers or the metric watcher and nothing else feed() acts on."""
        rule_lits = {lit for r in self.cat.rules for lit in r.literals}
        marker_lits = {lit for m in self.cat.markers for lit in m.literals}
        others = set(STRUCTURE_LITERALS) - _METRIC_SET
        # a Python warning's head only needs remembering (_feed_markers_only does it)
        light = (marker_lits | _METRIC_SET | {WARNING_LITERAL}) - (others - {WARNING_LITERAL})
        return frozenset(light - rule_lits - {"[repeated"})

    @property
    def light_literals(self) -> frozenset[str]:
        """The literals that select markers or the metric watcher and nothing else (see feed_light)."""
        return self._light_literals

    def feed_light(self, lineno: int, text: str, present: set[str]) -> list[FindingRecord]:
        """``feed(lineno, text)`` for a line a scanner has read: ``text`` holds no ESC or CR, ``present`` is
        exactly the set of ``self.literals`` in it, all of them in ``light_literals``, and it holds none of
        EXCEPTION_WORDS. Such a line is never a remembered repeat (those hold rule-only literals)."""
        if self._tbs or self._chain_pending or self._noise_pending:
            return self.feed(lineno, text)
        if lineno > self.last_line:
            self.last_line = lineno
        if self._detect and lineno > DETECT_LINES:
            self._detect = False
        if present <= _METRIC_SET:
            if self._detect:
                self._detect_framework(text)
            return [f.to_dict() for f in self._metric_findings(lineno, text)]
        return self._feed_markers_only(lineno, text, present)

    def _feed_markers_only(self, lineno: int, text: str, present: set[str]) -> list[FindingRecord]:
        """feed() for a line whose literals are all in ``_light_literals`` and that holds no
        EXCEPTION_WORDS, with no traceback open: the same state changes, in the same order."""
        if self._detect:
            self._detect_framework(text)
        prefix, body = split_prefix(text)
        if WARNING_LITERAL in present and WARNING_LITERAL in body and _WARNING_HEAD_RE.search(body):
            self._warning_heads[prefix] = self._last_warning_head = lineno
        self._markers(body, lineno, present)
        # body is the end of text: no metric literal in text (present), none in body
        for lit in present:
            if lit in _METRIC_SET and lit in body:
                return [f.to_dict() for f in self._metric_findings(lineno, body)]
        return []

    # ------------------------------------------------------------------ repeated lines
    # A line whose literals only select rules, with no exception word, read while no traceback is open and
    # the framework is known: feed() finds no structure, marker, import, error level, metric or exception
    # line in it, only the first of its candidate rules whose regex matches (or none). When none of those
    # rules needs a context, that rule is a function of the text, and a second identical line only adds
    # one to its finding's count and its line to the finding's lines (as _add_finding does). Logs repeat
    # such lines verbatim (a warning printed every step): those are remembered by their text.

    def _remember(self, text: str, present: set[str], rule: Rule | None, warning_prefix: str | None) -> None:
        rules = self.cat.rules
        if any(rules[i].context is not None for lit in present for i in self._rules_by_lit.get(lit, ())):
            return
        if rule is not None and rule.id == "noise_exception_ignored_del":
            return  # it opens a pending noise traceback
        if len(self._repeats) >= REPEAT_LINES:
            self._repeats.clear()
        self._repeats[text] = (self.framework, rule, warning_prefix)

    def _repeated_line(self, lineno: int, text: str) -> bool:
        """Account for a remembered line (no traceback open): True when done."""
        seen = self._repeats.get(text)
        if seen is None or seen[0] != self.framework or self._detect:
            return False
        if self._last_warning_head == lineno - 1:
            return False  # it may go on with a warning's message: the whole of feed() decides
        if seen[2] is not None:
            self._warning_heads[seen[2]] = self._last_warning_head = (
                lineno  # a warning's head again: what follows may be its message
            )
        rule = seen[1]
        if rule is None:
            return True
        f = self._findings.get((rule.cls, rule.id))
        if f is None:
            return False  # its first finding: the whole of feed() makes it
        f.count += 1
        if len(f.lines) < 8 and lineno not in f.lines:
            f.lines.append(lineno)
        return True

    # ------------------------------------------------------------------ internals

    def _detect_framework(self, text: str) -> None:
        for fw, lit in self._fw_literals:
            if lit in text:
                self.framework = fw
                # demo lines are NeMo-RL shaped: keep looking for demo evidence until demo is seen
                if fw == "demo" or fw == "verl":
                    self._detect = False
                return

    def _present_words(self, text: str) -> tuple[set[str], bool]:
        """(the catalog literals occurring in ``text``, whether one of EXCEPTION_WORDS does)."""
        if self._line_ac is None:
            return self._present(text), _EXCEPTION_WORD_RE.search(text) is not None
        found = set(self._line_ac.find_matches_as_strings(text, overlapping=True))
        if found.isdisjoint(_EXCEPTION_WORD_SET):
            return found, False
        return found & self._literal_set, True

    def _present(self, text: str) -> set[str]:
        """The catalog literals occurring in ``text`` (Aho-Corasick when available)."""
        if self._line_ac is not None:
            return self._present_words(text)[0]
        if not self._prefilter.search(text):
            return set()
        return {
            lit
            for lit in self._rules_by_lit.keys() | self._markers_by_lit.keys() | set(STRUCTURE_LITERALS)
            if lit in text
        }

    def _match_rule(self, body: str, present: set[str], noise_only: bool = False) -> Rule | None:
        idx = sorted({i for lit in present for i in self._rules_by_lit.get(lit, ())})
        rules = self.cat.rules
        for i in idx:
            rule = rules[i]
            if noise_only and rule.verdict != "Noise":
                continue
            if rule.frameworks and self.framework not in rule.frameworks:
                continue
            if rule.context is not None:
                seen = self.context.get(rule.context)
                if seen is None or self.last_line - seen > CONTEXT_WINDOW:
                    continue
            if rule.regex.search(body):
                return rule
        return None

    def _drop_benign_fatal(self, rule: Rule, lineno: int) -> None:
        """Forget the fatal marker of line ``lineno`` (which ``rule`` just named) when that line is no death of
        its own: shutdown noise with an exit code ("died, exit code: -15"), or a line the library retries
        ("failed to allocate ... CUDA_ERROR_OUT_OF_MEMORY", then a smaller size)."""
        if not self.fatal or self.fatal[-1][0] != lineno:
            return
        if (rule.cls == NOISE_CLASS and self.fatal[-1][1] == EXIT_CODE) or rule.transient:
            self.fatal.pop()

    def _markers(self, body: str, lineno: int, present: set[str]) -> None:
        idx: Sequence[int]
        if len(present) == 1:
            for lit in present:
                idx = self._markers_of.get(lit, ())
        else:
            key = frozenset(present)
            idx = self._markers_of_set.get(key)  # type: ignore[assignment]
            if idx is None:
                idx = tuple(sorted({i for lit in present for i in self._markers_by_lit.get(lit, ())}))
                if len(self._markers_of_set) < 1024:
                    self._markers_of_set[key] = idx
        for i in idx:
            m = self.cat.markers[i]
            hit = m.regex.search(body)
            if hit is None:
                continue
            if m.kind == "progress":  # (groupdict() would copy every group, a verl line's rest too)
                step = int(hit.group("step"))
                if step < m.min_step:
                    continue
                self.step = step if self.step is None or step > self.step else self.step
                if "total" in m.regex.groupindex and hit.group("total"):
                    self.total = int(hit.group("total"))
                if m.complete_at_total and self.total and step >= self.total:
                    self._complete(lineno, body)
            elif m.kind == "total":
                self.total = int(hit.group("total"))
            elif m.kind == "complete":
                self._complete(lineno, body)
            elif m.kind == "context" and m.tag:
                self.context[m.tag] = lineno
                self.context_first.setdefault(m.tag, lineno)
            elif m.kind == "evidence" and m.tag:
                self.evidence.setdefault(m.tag, hit.groupdict().get("value") or body.strip())
            elif m.kind == "exiting" and self.exiting_line is None:
                self.exiting_line = lineno
            elif m.kind == "fatal" and len(self.fatal) < 20:
                self.fatal.append((lineno, m.id, evidence_text(body)))

    def _complete(self, lineno: int, body: str) -> None:
        if self.completed_line is None:
            self.completed_line = lineno
            self.evidence.setdefault("complete", evidence_text(body))

    def _structure(self, prefix: str, body: str, lineno: int, new: list[Finding], stripped: str = "") -> None:
        """``stripped``: the open traceback's indent, already taken off ``body``: a header there opens a
        traceback indented as deep (two processes' tracebacks interleaved in an indented paste)."""
        if TRACEBACK_START in body:
            old = self._tbs.pop(prefix, None)
            if old is not None:
                self._close(prefix, old, new)
            tb = _Traceback(start=lineno, indent=stripped + body[: _indent_width(body)])
            head = _IPY_HEADER_RE.match(body)
            if head is not None:
                tb.header_type, tb.header_text = head.group("type"), body.strip()
            if prefix in self._chain_pending:
                tb.chained = True
                self._chain_pending.discard(prefix)
            if prefix in self._noise_pending:
                tb.noise = True
                self._noise_pending.discard(prefix)
            self._tbs[prefix] = tb
            self._inline_frames(tb, body)
            return
        if any(lit in body for lit in CHAIN_LITERALS):
            old = self._tbs.pop(prefix, None)
            if old is not None:
                self._close(prefix, old, new)
            before = old or self._last_closed.get(prefix)
            if before is not None and before.noise:  # raised while handling noise: noise too
                self._noise_pending.add(prefix)
            else:
                self._chain_pending.add(prefix)
            return
        fm = _FRAME_RE.match(body) or (
            _IPY_FRAME_RE.match(body) if prefix in self._tbs else _IPY8_FRAME_RE.match(body)
        )
        if fm:
            found = self._tbs.get(prefix)
            if found is not None:
                tb = found
            else:  # an excerpt that starts inside a traceback: frames sit two columns in from its header
                lead = body[: len(body) - len(body.lstrip(" "))]
                tb = _Traceback(
                    start=lineno, noise=prefix in self._noise_pending, indent=stripped + lead[:-2]
                )
                self._noise_pending.discard(prefix)
                self._tbs[prefix] = tb
            func = fm.group("func") or fm.groupdict().get("pfunc") or ""
            if not tb.frames and func == "__del__":
                # Python never propagates an exception out of a finalizer: a traceback that starts in __del__
                # is one it printed and ignored ("Exception ignored in: <function X.__del__>", maybe cut off)
                tb.noise = True
            tb.frames.append(body.strip())
            tb.frame_indent = _indent_width(body)
            tb.funcs.append(func)
            while len(tb.sources) < len(tb.frames) - 1:
                tb.sources.append("")
            return
        open_tb = self._tbs.get(prefix)
        if open_tb is not None and self._inline_frames(open_tb, body):
            return
        if (
            prefix in self._noise_pending
            and body.strip(" -")  # not IPython's rule of dashes above its traceback header
            and not body.startswith(" ")
            and "Exception ignored in" not in body
        ):
            self._noise_pending.discard(prefix)

    @staticmethod
    def _inline_frames(tb: _Traceback, body: str) -> bool:
        """Frames inside one line: a traceback that a log collector (CloudWatch, a web log view) flattened
        into a single line ("Traceback (most recent call last): File "a.py", line 3, in f x() File ...")."""
        if ' File "' not in body:
            return False
        matches = list(_INLINE_FRAME_RE.finditer(body))
        for i, m in enumerate(matches):
            tb.frames.append(m.group(0))
            tb.funcs.append(m.group("func"))
            # the source line Python quoted under the frame: the text up to the next frame (the last
            # frame's, up to the exception's type)
            source = body[m.end() : matches[i + 1].start() if i + 1 < len(matches) else len(body)]
            if i + 1 == len(matches):
                source = _INLINE_EXC_START_RE.split(source, maxsplit=1)[0]
            tb.sources.append(source.strip())
        return bool(matches)

    def _exception_line(
        self, prefix: str, tb: _Traceback, exc: re.Match[str], lineno: int, body: str, new: list[Finding]
    ) -> None:
        etype = exc.group("type")
        if exc.group("inner") and any(w in etype for w in _RAY_WRAPPERS):
            tb.frames.clear()  # the remote traceback follows; keep the traceback open
            tb.funcs.clear()
            tb.sources.clear()
            tb.wrapper = exc.group("inner")
            tb.exc_line, tb.exc_text, tb.exc = lineno, body, exc
            return
        tb.exc_line, tb.exc_text, tb.exc = lineno, body, exc
        self._tbs.pop(prefix, None)
        self._close(prefix, tb, new)

    def _note_root(self, lineno: int, text: str) -> None:
        if self.root_exception is None:
            self.root_exception = (lineno, evidence_text(text))

    @staticmethod
    def _logged_exception(body: str, present: set[str]) -> re.Match[str] | None:
        """The exception line in a log record's message: after an error-level head, or after a bracketed time
        (and the process prefix that may follow it)."""
        if not present.isdisjoint(ERROR_LEVEL_LITERALS):
            head = _LOGGED_ERROR_HEAD_RE.match(body)
            if head is not None and head.end() > 0:
                return _EXC_RE.match(body[head.end() :])
        if body[:1] == "`":  # an exception line quoted as inline code in an issue's prose
            return _EXC_RE.match(body.strip("` \t"))
        if body[:1] == "[":
            head = _TIME_HEAD_RE.match(body)
            if head is not None:
                return _EXC_RE.match(split_prefix(body[head.end() :])[1])
        if (
            "pid=" in body
        ):  # a Ray worker's line under a collector's own prefix (journald, kubectl, a timestamp)
            ray = _RAY_PREFIX_IN_LINE_RE.search(body)
            if ray is not None:
                return _EXC_RE.match(split_prefix(body[ray.start() :])[1])
        return None

    def _bare_exception(
        self, exc: re.Match[str], lineno: int, body: str, rule: Rule | None, handled: bool, new: list[Finding]
    ) -> None:
        """``Type: message`` with no traceback around it (an excerpt cut above it, a logged error)."""
        if rule is not None and rule.verdict == "Noise":
            return
        etype = exc.group("type")
        # a bare word such as "Error" or "ValueError" alone is not an exception line; "AssertionError" alone is:
        # Python's line for an assert without a message (a traceback pasted without its frames)
        if not (exc.group("msg") or etype.endswith("Interrupt") or "." in etype or etype == "AssertionError"):
            return
        self._note_root(lineno, body)
        if handled:
            return
        f = self._exception_finding(etype, exc.group("inner"), exc.group("msg") or "", lineno, body)
        f = f or self.component_finding(body, lineno)
        if f is not None:
            f.confidence = min(f.confidence, 0.7)
            added = self._add_finding(f, 1)
            if added is not None:
                new.append(added)

    def _close(self, prefix: str, tb: _Traceback, new: list[Finding]) -> None:
        self._last_closed[prefix] = tb
        if tb.noise:
            return
        if tb.exc_text is not None:
            self._note_root(tb.exc_line or tb.start, tb.exc_text)
            if len(self.fatal) < 20:
                self.fatal.append((tb.exc_line or tb.start, "uncaught_exception", evidence_text(tb.exc_text)))
        if tb.classified:
            return
        f = self._classify_traceback(tb, prefix)
        if f is not None:
            added = self._add_finding(f, 1)
            if added is not None:
                new.append(added)
            tb.classified = True

    def _exception_finding(
        self,
        etype: str,
        inner: str | None,
        msg: str,
        lineno: int,
        text: str,
        frames: list[str] | None = None,
        stage: str = "all",
    ) -> Finding | None:
        """A finding named by the exception's type (the wrapped type for Ray wrappers), or None.
        ``stage``: "early" skips the entries that yield to frame rules (``after_frames``), "late" tries
        only those, "all" both (an exception line with no frames)."""
        types = [inner, etype] if inner else [etype]
        for t in types:
            if t is None:
                continue
            if t.rsplit(".", 1)[-1] in ("ModuleNotFoundError", "ImportError"):
                if stage == "late":
                    return None
                return self._import_decision(msg, text, lineno, frames or [], t, in_worker=inner is not None)
            for er in self.cat.exceptions:
                if (stage == "early" and er.after_frames) or (stage == "late" and not er.after_frames):
                    continue
                if er.type_re.search(t) and (er.message_re is None or er.message_re.search(msg)):
                    return self._exc_rule_finding(er, lineno, text, frames)
        return None

    def _raised_finding(self, tb: _Traceback, line: int, lines: list[int]) -> Finding | None:
        """A traceback cut before its exception line whose last frame quotes a ``raise Type(...)``: that
        type (and the message written in the statement) names the cause as an exception line would, with
        less confidence. None when the statement is missing or names no known type."""
        if not tb.frames or len(tb.sources) != len(tb.frames):
            return None
        m = _RAISE_RE.match(tb.sources[-1])
        if m is None:
            return None
        msg = (m.group("msg") or "").strip().rstrip(")").lstrip("frbFRB").strip("\"'")
        f = self._cut_traceback_guess(m.group("type"), msg, tb.sources[-1], tb, line, lines, RAISED)
        if f is not None or not msg:
            return f
        # no entry knows the type: the message as its exception line would print it, read by the line rules
        exc_line = f"{m.group('type')}: {msg}"
        rule = self._match_rule(exc_line, self._present(exc_line))
        if rule is None or rule.soft or rule.transient or rule.verdict not in rootcause.FAILING:
            return None
        return Finding(
            rule.cls,
            rule.verdict,
            line,
            evidence_text(tb.sources[-1]),
            f"{rule.id}+{RAISED}",
            file=self.source,
            confidence=min(rule.confidence, 0.5),
            lines=lines,
        )

    def _header_finding(self, tb: _Traceback, line: int, lines: list[int]) -> Finding | None:
        """An IPython traceback cut before its exception line: the type its header names, read as an
        exception line with no message (less confidence), or None when no entry knows the type."""
        if tb.header_type is None:
            return None
        return self._cut_traceback_guess(tb.header_type, "", tb.header_text, tb, line, lines, IPY_HEADER)

    def _cut_traceback_guess(
        self, etype: str, msg: str, text: str, tb: _Traceback, line: int, lines: list[int], suffix: str
    ) -> Finding | None:
        """The finding an exception of ``etype`` would give, read from a traceback cut before its exception
        line (rule id + ``suffix``, confidence at most 0.5), or None when no entry knows the type."""
        f = self._exception_finding(etype, None, msg, line, text, tb.frames, stage="all")
        if f is None:
            return None
        f.rule, f.lines = f"{f.rule}+{suffix}", lines
        f.confidence = min(f.confidence, 0.5)
        return f

    def component_finding(self, text: str, lineno: int) -> Finding | None:
        """The last-resort class a text names by the component it mentions (see [[component]])."""
        for c in self.cat.components:
            if c.regex.search(text):
                return Finding(
                    c.cls,
                    c.verdict,
                    lineno,
                    evidence_text(text),
                    f"component:{c.id}",
                    file=self.source,
                    tier=2,
                    confidence=0.45,
                    lines=[lineno],
                    also=["unknown_error"],
                )
        return None

    def _exc_rule_finding(
        self, er: ExceptionRule, lineno: int, text: str, frames: list[str] | None = None
    ) -> Finding:
        cls, verdict, rule_id, also = er.cls, er.verdict, er.id, list(er.also)
        # the deepest frame, the one that made the failing call: inside the Megatron / Bridge / NeMo-RL stack
        # itself, else inside an installed package (not the user's code), its class names the cause instead
        imp = self.cat.imports
        callers = (
            (er.stack_caller, imp.bridge_path_re, STACK_CALLER),
            (er.library_caller, imp.installed_path_re, LIBRARY_CALLER),
        )
        for caller, path_re, suffix in callers:
            if caller and frames and path_re is not None and path_re.search(frames[-1]):
                also = [er.cls, *(c for c in also if c not in (er.cls, caller))]
                cls, rule_id = caller, f"{er.id}+{suffix}"
                verdict = self.cat.classes[cls].verdict
                break
        mixed = self._mixed_upgrade(cls, rule_id, frames)
        if mixed is not None:
            cls, rule_id, also = mixed[0], mixed[1], [*mixed[2], *(c for c in also if c not in mixed[2])]
            verdict = self.cat.classes[cls].verdict
        info = self.cat.classes[cls]
        return Finding(
            cls,
            verdict,
            lineno,
            evidence_text(text),
            rule_id,
            file=self.source,
            tier=er.tier if er.tier is not None else info.tier,
            confidence=er.confidence,
            also=also,
        )

    def _import_finding(self, prefix: str, body: str, lineno: int, tb: _Traceback | None) -> Finding | None:
        head = body.lstrip()
        if "No module named" not in body and not head.startswith(("ImportError", "ModuleNotFoundError")):
            return None  # e.g. "RayTaskError(ModuleNotFoundError)": decided when its traceback closes
        if head.startswith(PYTEST_IMPORT_HEADER):
            return None  # pytest's header over a module it could not collect: its "E   ImportError: ..." line decides
        frames = (tb.frames if tb is not None else []) or []
        in_worker = "raylet" in prefix or bool(tb is not None and tb.wrapper)
        return self._import_decision(
            body,
            body,
            lineno,
            frames,
            "ModuleNotFoundError",
            in_worker,
            _RAY_ACTOR_PREFIX_RE.match(prefix) is not None,
        )

    def _import_decision(
        self,
        msg: str,
        text: str,
        lineno: int,
        frames: list[str],
        etype: str,
        in_worker: bool = False,
        in_actor: bool = False,
    ) -> Finding:
        """The module named by a failed import decides: the Bridge/NeMo-RL/Megatron stack (bridge_import),
        a worker interpreter that is not the driver's (container_venv_mismatch), anything else
        (missing_dependency). ``in_actor``: printed by a Ray actor ("(MegatronPolicyWorker pid=1)")."""
        pol = self.cat.imports
        m = _MODULE_RE.search(msg) or _MODULE_RE.search(text)
        mod = m.group("mod").strip(".") if m else ""
        where = "\n".join([*frames, text])
        lines = [lineno]
        in_worker = in_worker or "ray/workers/default_worker.py" in where
        also: list[str] = []
        is_bridge = bool(mod) and any(mod == b or mod.startswith(b + ".") for b in pol.bridge_modules)
        if mod and pol.venv_path_re is not None and pol.venv_path_re.search(where):
            cls, rid, conf = "container_venv_mismatch", "import_worker_venv", 0.7
            also = ["bridge_import" if is_bridge else "missing_dependency"]
        elif mod in pol.launcher_modules:
            # a launcher's child (a Jupyter kernel) started by an interpreter that lacks what the launcher has
            cls, rid, conf = "container_venv_mismatch", "import_launcher_module", 0.65
            also = ["missing_dependency"]
        elif mod and _SYSTEM_PYTHON_RE.search(text):
            # "/usr/bin/python: No module named X" (python -m X): the system interpreter ran it, not the
            # environment the package is installed in (sudo, pdsh/ssh to another host, an env not activated)
            cls, rid, conf = "container_venv_mismatch", "import_system_interpreter", 0.55
            also = ["bridge_import" if is_bridge else "missing_dependency"]
        elif (
            mod
            and "." not in mod
            and any(
                (m2 := _INSTALLED_PACKAGE_FRAME_RE.search(fr)) is not None and m2.group("pkg") == mod
                for fr in frames
            )
        ):
            # the package's own installed code is running, yet its name does not import: the interpreter
            # running it is not the one the package is installed for (another env's site-packages on the path)
            cls, rid, conf = "container_venv_mismatch", "import_own_package", 0.6
            also = ["missing_dependency"]
        elif mod and self._mixed_environments(frames):
            # frames from an environment in the user's home and from one outside it: two environments mixed
            cls, rid, conf = "container_venv_mismatch", "import_mixed_environments", 0.6
            also = ["bridge_import" if is_bridge else "missing_dependency"]
        elif in_worker and not is_bridge:
            # the driver got this far, a Ray worker cannot import: the worker's interpreter/env differs
            cls, rid, conf = "container_venv_mismatch", "import_in_ray_worker", 0.6
            also = ["missing_dependency"]
        elif is_bridge:
            if mod.count(".") + 1 <= pol.bridge_max_depth:
                cls, rid, conf = "bridge_import", "import_bridge_stack", 0.85
            elif in_worker or in_actor:  # the stack is there in the worker's env, at another version
                cls, rid, conf = "container_venv_mismatch", "import_bridge_submodule", 0.7
                also = ["bridge_import"]
            else:  # the package is there but lacks a module: the stack at a version the caller does not fit
                cls, rid, conf = "bridge_import", "import_bridge_submodule", 0.7
                also = ["container_venv_mismatch"]
        else:
            cls, rid, conf = "missing_dependency", "import_missing_module", 0.8 if mod else 0.6
        info = self.cat.classes[cls]
        return Finding(
            cls,
            info.verdict,
            lineno,
            evidence_text(text),
            rid,
            file=self.source,
            confidence=conf,
            lines=lines,
            also=also,
        )

    def _mixed_environments(self, frames: list[str]) -> bool:
        """Frames of installed packages from an environment in a user's home (the user site ~/.local, a venv or
        conda there) and from one outside it (/usr, /opt): the interpreter runs with two environments mixed."""
        pol = self.cat.imports
        if pol.env_root_re is None or pol.home_root_re is None:
            return False
        kinds: set[bool] = set()
        for fr in frames:
            m = pol.env_root_re.search(fr)
            if m is not None:
                kinds.add(pol.home_root_re.search(m.group("root")) is not None)
                if len(kinds) == 2:
                    return True
        return False

    def _mixed_upgrade(
        self, cls: str, rule_id: str, frames: list[str] | None
    ) -> tuple[str, str, list[str]] | None:
        """A missing or conflicting package (missing_dependency) in frames of two mixed environments: the
        environment, not the package, is what to fix (container_venv_mismatch)."""
        if cls != "missing_dependency" or not frames or not self._mixed_environments(frames):
            return None
        return "container_venv_mismatch", f"{rule_id}+{MIXED_ENVIRONMENTS}", ["missing_dependency"]

    def _signal_interrupted(self, tb: _Traceback) -> bool:
        """A frame of a signal handler entered from a blocking call (sleep, wait, join...)."""
        for i, func in enumerate(tb.funcs):
            if i and _SIGNAL_HANDLER_RE.match(func):
                caller_src = tb.sources[i - 1] if i - 1 < len(tb.sources) else ""
                if _BLOCKING_RE.search(caller_src) or _BLOCKING_RE.search(tb.funcs[i - 1]):
                    return True
        return False

    def _classify_traceback(self, tb: _Traceback, prefix: str) -> Finding | None:
        """A traceback no rule recognised: its exception type, its frames, else unknown_error (unless chained)."""
        line = tb.exc_line if tb.exc_line is not None else tb.start
        evidence = tb.exc_text or (tb.frames[-1] if tb.frames else TRACEBACK_START)
        lines = sorted({tb.start, line})
        if tb.exc_text is None and not tb.wrapper:
            f = self._raised_finding(tb, line, lines) or self._header_finding(tb, line, lines)
            if f is not None:
                return f
        if tb.exc_text is not None or tb.wrapper:
            exc = tb.exc
            etype = exc.group("type") if exc else ""
            msg = (exc.group("msg") or "") if exc else ""
            if not msg and etype.endswith("AssertionError") and tb.sources and tb.sources[-1]:
                msg = tb.sources[-1]  # a bare `assert`: the asserted statement is the message
            f = self._exception_finding(etype, tb.wrapper, msg, line, evidence, tb.frames, stage="early")
            if f is not None:
                f.lines = lines
                return f
        if self._signal_interrupted(tb):
            return Finding(
                "cancelled",
                "Cancelled",
                line,
                evidence,
                "frames_signal_handler",
                file=self.source,
                confidence=0.6,
                lines=lines,
            )
        frames = "\n".join([tb.exc_text or "", *tb.frames] if tb.wrapper else tb.frames)
        for fr in self.cat.frame_rules:
            if fr.unterminated and (tb.exc_text is not None or self.root_exception is not None):
                continue  # a guess from a cut traceback, never over an exception already seen
            if fr.sources:
                text = _frames_with_sources(tb, fr.last)
            else:
                text = "\n".join(tb.frames[-fr.last :]) if fr.last else frames
            if fr.regex.search(text):
                cls, verdict, rid = fr.cls, fr.verdict, fr.id
                also: list[str] = []
                mixed = self._mixed_upgrade(fr.cls, fr.id, tb.frames)
                if mixed is not None:
                    cls, rid, also = mixed
                    verdict = self.cat.classes[cls].verdict
                return Finding(
                    cls,
                    verdict,
                    line,
                    evidence,
                    rid,
                    file=self.source,
                    tier=fr.tier,
                    confidence=fr.confidence,
                    lines=lines,
                    also=also,
                )
        if tb.exc_text is not None or tb.wrapper:
            f = self._exception_finding(etype, tb.wrapper, msg, line, evidence, tb.frames, stage="late")
            if f is not None:
                f.lines = lines
                return f
        if tb.chained:
            prev = self._last_closed.get(prefix)
            if prev is not None and prev is not tb and prev.classified:
                return None
        if tb.exc_text is None:
            return None  # unterminated: decided at result() time
        comp = self.component_finding(tb.exc_text, line)
        if comp is not None:
            comp.lines = lines
            return comp
        etype = tb.exc_text.split(":", 1)[0].strip()
        return Finding(
            "unknown_error",
            self.cat.classes["unknown_error"].verdict,
            line,
            evidence,
            f"traceback:{etype}",
            file=self.source,
            confidence=0.4,
            lines=lines,
        )

    def _pending_traceback_findings(self, existing: list[Finding]) -> list[Finding]:
        """Tracebacks still open at the end of the input (an excerpt cut mid-traceback)."""
        out: list[Finding] = []
        for prefix, tb in self._tbs.items():
            if tb.noise or tb.classified:
                continue
            f = self._classify_traceback(tb, prefix)
            if f is None and not any(
                x.verdict in ("Fail", "Blocked") and not x.transient for x in existing + out
            ):
                f = Finding(
                    "unknown_error",
                    self.cat.classes["unknown_error"].verdict,
                    tb.start,
                    tb.frames[-1] if tb.frames else TRACEBACK_START,
                    "traceback:unterminated",
                    confidence=0.3,
                    lines=[tb.start],
                )
            if f is not None:
                f.evidence = evidence_text(f.evidence)
                f.file = self.source
                out.append(f)
        return out

    def _add_finding(self, f: Finding, count: int) -> Finding | None:
        key = (f.cls, f.rule)
        old = self._findings.get(key)
        if old is not None:
            old.count += count
            if len(old.lines) < 8 and f.line not in old.lines:
                old.lines.append(f.line)
            return None
        f.count = count
        f.evidence = evidence_text(f.evidence)
        if not f.lines:
            f.lines = [f.line]
        if f.file is None:
            f.file = self.source
        self._findings[key] = f
        self._order.append(f)
        return f

    def _frame_upgrade(self, cls: str, tb: _Traceback | None) -> tuple[str, str, str] | None:
        """(class, verdict, frame rule id) when the frames around a finding change its class."""
        if tb is None or not tb.frames:
            return None
        frames = None
        for fr in self.cat.frame_rules:
            if cls in fr.upgrades:
                frames = frames if frames is not None else "\n".join(tb.frames)
                if fr.regex.search(frames):
                    return fr.cls, fr.verdict, fr.id
        return None

    def _add(
        self,
        cls: str,
        verdict: str,
        lineno: int,
        text: str,
        rule_id: str,
        count: int,
        soft: bool,
        rule: Rule | None,
        upgrade: tuple[str, str, str] | None = None,
        in_warning: bool = False,
    ) -> Finding | None:
        if upgrade is not None:
            cls, verdict, frame_id = upgrade
            rule_id = f"{rule_id}+{frame_id}"
            rule = None
        if in_warning:  # its own finding (rule id): the same line outside a warning still counts in full
            rule_id = f"{rule_id}+{IN_WARNING}"
        transient = (rule.transient if rule else False) or in_warning
        if transient and text[:1] == "F" and _GLOG_FATAL_RE.match(text):
            # a warning-like line logged at glog's FATAL severity: the process aborts right after it
            transient, rule_id = False, f"{rule_id}+{GLOG_FATAL}"
        lines = [lineno]
        if rule is not None and rule.context is not None and rule.context in self.context:
            lines.insert(0, self.context[rule.context])
        f = Finding(
            cls=cls,
            verdict=verdict,
            line=lineno,
            evidence=text,
            rule=rule_id,
            soft=soft,
            file=self.source,
            advice=rule.advice if rule else None,
            remedy=rule.remedy if rule else None,
            tier=rule.tier if rule else None,
            confidence=rule.confidence if rule else 0.9,
            lines=lines,
            transient=transient,
            counts_at_end=bool(rule and rule.counts_at_end),
            min_count=rule.min_count if rule else 1,
        )
        return self._add_finding(f, count)
