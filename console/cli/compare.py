"""``rl-console compare BASE CANDIDATE [--json] [--tolerance METRIC=REL[,ABS]] [--last-k K]``.

Exit codes: 0 Same, 1 Changed, 3 Inconclusive, 2 bad input (as Pass/Fail/Blocked elsewhere).
"""

from __future__ import annotations

import argparse
import json

from console.compare import VERDICT_EXIT, compare_runs
from console.compare.render import text
from console.compare.tolerances import parse_tolerance
from console.runs.store import RunStore, runs_dir_from


def cmd_compare(args: argparse.Namespace) -> int:
    store = RunStore(runs_dir_from(args.runs_dir))
    tolerances = [parse_tolerance(t) for t in args.tolerance or []]
    base, cand = store.resolve(args.baseline), store.resolve(args.candidate)
    result = compare_runs(base, cand, tolerances, args.last_k)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print(text(result), end="")
    return VERDICT_EXIT[result["verdict"]]
