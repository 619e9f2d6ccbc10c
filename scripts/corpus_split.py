"""Validate triage corpus files and (re)compute their held-out split.

Each line of a corpus file is one JSON case. The split is decided by source thread so that all
cases of one thread land on the same side: a case is "heldout" when
int(sha1(source_url).hexdigest(), 16) % 3 == 0, else "tuning".

Usage: python scripts/corpus_split.py FILE... [--write]
Checks: every line parses, required keys present, ids unique across the files, source_url looks
like https://github.com/<owner>/<repo>/(issues|pull|discussions)/N, the stored split matches the
computed one. --write rewrites the split field in place. Exit 0 when clean, 1 on problems,
2 on bad usage.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

REQUIRED = ("id", "source_url", "framework", "log_excerpt", "expected_class", "expected_verdict", "resolution")
URL_RE = re.compile(r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/(issues|pull|discussions)/\d+$")


def split_for(url: str) -> str:
    """The split of every case that comes from the thread at `url`."""
    return "heldout" if int(hashlib.sha1(url.encode("utf-8")).hexdigest(), 16) % 3 == 0 else "tuning"


def check_file(path: Path, seen_ids: dict[str, str], write: bool) -> list[str]:
    """Problems found in one corpus file; rewrites the split in place when `write`."""
    problems: list[str] = []
    cases: list[dict] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{path}:{lineno}"
        if not line.strip():
            problems.append(f"{where}: empty line")
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg})")
            continue
        if not isinstance(case, dict):
            problems.append(f"{where}: not a JSON object")
            continue
        cases.append(case)
        missing = [key for key in REQUIRED if key not in case]
        if missing:
            problems.append(f"{where}: missing {', '.join(missing)}")
        case_id = str(case.get("id", ""))
        if case_id in seen_ids:
            problems.append(f"{where}: duplicate id {case_id!r} (also {seen_ids[case_id]})")
        seen_ids[case_id] = where
        url = str(case.get("source_url", ""))
        if not URL_RE.match(url):
            problems.append(f"{where}: source_url {url!r} is not a GitHub issue/pull/discussion URL")
            continue
        expected = split_for(url)
        if write:
            case["split"] = expected
        elif case.get("split") != expected:
            problems.append(f"{where}: split {case.get('split')!r}, expected {expected!r}")
    if write and not any(p.startswith(f"{path}:") and "not JSON" in p for p in problems):
        path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    return problems


def main(argv: list[str]) -> int:
    write = "--write" in argv
    files = [Path(a) for a in argv if a != "--write"]
    if not files:
        print("usage: corpus_split.py FILE... [--write]", file=sys.stderr)
        return 2
    for path in files:
        if not path.is_file():
            print(f"error: no such file: {path}", file=sys.stderr)
            return 2
    seen: dict[str, str] = {}
    problems: list[str] = []
    counts: dict[str, int] = {"heldout": 0, "tuning": 0}
    for path in files:
        problems += check_file(path, seen, write)
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                url = json.loads(line).get("source_url", "")
            except (json.JSONDecodeError, AttributeError):
                continue
            if URL_RE.match(str(url)):
                counts[split_for(url)] += 1
    for problem in problems:
        print(problem)
    print(f"{len(seen)} cases: {counts['tuning']} tuning, {counts['heldout']} heldout; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
