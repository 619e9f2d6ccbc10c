"""Score triage on corpus files of real logs, per split, and print a table.

    python scripts/eval_corpus.py [FILE.jsonl ...] [--verbose] [--no-split]

With no file: every ``tests/corpus/*.jsonl`` plus ``../shared/triage-corpus/cases.jsonl`` when present.
Columns: cases, verdict %, class %, false Pass (failing logs called Pass), misses; then one line per miss.
Cases are triaged in-process through the same entry point as ``rl-console triage --json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from console.triage.evaluate import load_cases, score_cases, table

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "triage-corpus" / "cases.jsonl"


def default_files() -> list[Path]:
    files = sorted((ROOT / "tests" / "corpus").glob("*.jsonl"))
    if SHARED.is_file():
        files.append(SHARED)
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--verbose", action="store_true", help="list every case, not only the misses")
    ap.add_argument("--no-split", action="store_true", help="one row per file")
    args = ap.parse_args(argv)
    files = args.files or default_files()
    if not files:
        print("eval_corpus: no corpus file given or found", file=sys.stderr)
        return 2
    scores = []
    for f in files:
        try:
            cases = load_cases(f)
        except (OSError, ValueError) as exc:
            print(f"eval_corpus: {exc}", file=sys.stderr)
            return 2
        per = score_cases(cases, by_split=not args.no_split, name=f.stem)
        scores += [per[k] for k in sorted(per)]
    print(table(scores, verbose=args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
