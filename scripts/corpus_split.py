#!/usr/bin/env python3
"""Check (and optionally fill in) the split of the real-log triage corpus.

The corpus is split once, by source thread: a case is "heldout" when
int(sha1(source_url).hexdigest(), 16) % 3 == 0, else "tuning", so every case from one
thread lands in the same part. This script recomputes that split and validates each line:
it parses as a JSON object with the corpus fields, ids are unique across all files given,
source_url names a GitHub issue, pull request or discussion, classes and verdicts are known,
and no URL already appears in the shared corpus (../shared/triage-corpus/cases.jsonl).

Usage: python scripts/corpus_split.py [--write] [--shared FILE] CASES.jsonl...
  --write   rewrite each file with the recomputed "split" (other fields untouched)
Prints per-file counts by split and class, then one line per problem.
Exit 0 when every line is valid, 1 when some are not, 2 on bad input (missing file).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

from console.triage.rules import CLASS_IDS

SPLITS = ("tuning", "heldout")
FIELDS = ("id", "source_url", "framework", "log_excerpt", "expected_class", "expected_verdict", "resolution")
FRAMEWORKS = (
    "nemo-rl",
    "verl",
    "megatron",
    "bridge",
    "te",
    "ray",
    "vllm",
    "other",
    "sglang",
    "hf",
    "deepspeed",
    "openrlhf",
    "trl",
    "pytorch",
    "nccl",
)
CLASSES = (*CLASS_IDS, "pass")  # the triage classes, and "pass" for a successful run
VERDICTS = ("Pass", "Fail", "Blocked", "Cancelled")
URL_RE = re.compile(r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/(issues|pull|discussions)/[0-9]+$")
DEFAULT_SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "triage-corpus" / "cases.jsonl"


def split_of(source_url: str) -> str:
    """The corpus part of a thread: 'heldout' for one thread in three (by SHA-1 of its URL)."""
    return "heldout" if int(hashlib.sha1(source_url.encode("utf-8")).hexdigest(), 16) % 3 == 0 else "tuning"


def _as_list(value: object) -> list:
    return value if isinstance(value, list) else [value]


def check_case(case: object) -> list[str]:
    """The problems of one parsed line (empty when it is a valid case)."""
    if not isinstance(case, dict):
        return ["not a JSON object"]
    problems = [f"missing field {name!r}" for name in FIELDS if name not in case]
    if problems:
        return problems
    for name in ("id", "source_url", "framework", "log_excerpt", "resolution"):
        if not isinstance(case[name], str) or not case[name].strip():
            problems.append(f"{name} must be a non-empty string")
    if problems:
        return problems
    if not URL_RE.match(case["source_url"]):
        problems.append(f"source_url is not a GitHub issue/pull/discussion URL: {case['source_url']}")
    if case["framework"] not in FRAMEWORKS:
        problems.append(f"unknown framework {case['framework']!r}")
    for name, known in (("expected_class", CLASSES), ("expected_verdict", VERDICTS)):
        values = _as_list(case[name])
        if not values or any(v not in known for v in values):
            problems.append(f"{name} has an unknown value: {case[name]!r}")
    if "split" in case and case["split"] not in SPLITS:
        problems.append(f"split must be one of {SPLITS}, not {case['split']!r}")
    return problems


def shared_urls(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    urls = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                urls.add(json.loads(line).get("source_url", ""))
            except (json.JSONDecodeError, AttributeError):
                continue
    return urls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--write", action="store_true", help="rewrite the files with the recomputed split")
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="corpus whose URLs must not reappear")
    args = ap.parse_args(argv)
    for path in args.files:
        if not path.is_file():
            print(f"corpus_split: no such file: {path}", file=sys.stderr)
            return 2
    taken = shared_urls(args.shared)
    seen_ids: dict[str, str] = {}
    problems: list[str] = []
    for path in args.files:
        lines = path.read_text(encoding="utf-8").splitlines()
        out: list[str] = []
        by_split: Counter[str] = Counter()
        by_class: Counter[str] = Counter()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                case = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(f"{where}: not JSON ({e.msg})")
                out.append(line)
                continue
            found = check_case(case)
            problems.extend(f"{where}: {p}" for p in found)
            if found:
                out.append(line)
                continue
            if case["id"] in seen_ids:
                problems.append(f"{where}: duplicate id {case['id']!r} (first at {seen_ids[case['id']]})")
            seen_ids.setdefault(case["id"], where)
            if case["source_url"] in taken:
                problems.append(f"{where}: {case['source_url']} is already in the shared corpus")
            split = split_of(case["source_url"])
            if args.write:
                case["split"] = split
            elif case.get("split") != split:
                problems.append(f"{where}: split should be {split!r}, not {case.get('split')!r}")
            by_split[split] += 1
            for cls in _as_list(case["expected_class"])[:1]:
                by_class[cls] += 1
            out.append(json.dumps(case, ensure_ascii=False))
        if args.write:
            path.write_text("\n".join(out) + "\n", encoding="utf-8")
        total = sum(by_split.values())
        print(f"{path}: {total} cases, " + ", ".join(f"{s} {by_split[s]}" for s in SPLITS))
        for cls, count in sorted(by_class.items()):
            print(f"  {cls:24} {count}")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
