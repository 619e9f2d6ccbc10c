"""Score triage on corpus files of real logs, per split, and print a table.

    python scripts/eval_corpus.py [FILE.jsonl ...] [--verbose] [--no-split]

With no file: every ``tests/corpus/*.jsonl`` plus ``../shared/triage-corpus/cases.jsonl`` when present.
Columns: cases, verdict %, class %, false Pass (failing logs called Pass), misses; then one line per miss.
Cases are triaged in-process through the same entry point as ``rl-console triage --json``.
``--write-floors FILE`` records each corpus file's split scores minus 3 points as the regression floors
that ``tests/test_triage_corpus_own.py`` asserts (``tests/corpus/floors.toml``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from console.triage.evaluate import Score, load_cases, score_cases, table

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "triage-corpus" / "cases.jsonl"
FLOOR_MARGIN = 3.0


def floors_toml(scores: list[Score]) -> str:
    """``[floor.<file stem>.<split>]`` tables: verdict/class measured now minus FLOOR_MARGIN points."""
    out = [
        "# Regression floors of tests/test_triage_corpus_own.py: the scores measured when these were",
        f"# written (scripts/eval_corpus.py --write-floors) minus {FLOOR_MARGIN:g} points. Raise them, never lower",
        "# them to make a change pass. The issue's targets are printed next to them by the test.",
        "",
    ]
    for s in scores:
        stem, _, split = s.name.partition(":")
        out += [
            f"[floor.{stem}.{split}]  # measured verdict {s.verdict_pct:.1f}, class {s.class_pct:.1f}, "
            f"{s.n} cases",
            f"verdict = {max(0.0, s.verdict_pct - FLOOR_MARGIN):.1f}",
            f"class = {max(0.0, s.class_pct - FLOOR_MARGIN):.1f}",
            "",
        ]
    return "\n".join(out)


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
    ap.add_argument(
        "--write-floors",
        type=Path,
        metavar="FILE",
        help=f"write measured scores minus {FLOOR_MARGIN:g} points as regression floors (TOML)",
    )
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
    if args.write_floors:
        own = [s for s in scores if s.name.partition(":")[2] in ("tuning", "heldout")]
        args.write_floors.write_text(floors_toml(own))
        print(f"eval_corpus: wrote {len(own)} floors to {args.write_floors}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
