"""`rl-console triage`: kept light, it runs once per log in evaluation loops (no torch, ray, textual,
tensorboard imported here)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from console import exitcodes
from console.commandtext import remedy_text
from console.errors import ConsoleError

if TYPE_CHECKING:
    from console.triage.model import TriageResult


def _print_human(res: TriageResult) -> None:
    prog = res.get("progress") or {}
    step = prog.get("step")
    where = f", step {step}/{prog.get('total') or '?'}" if step is not None else ""
    print(f"Verdict: {res['verdict']} (framework {res['framework']}{where})")
    p = res.get("primary")
    if p:
        loc = f"{p['file']}:{p['line']}" if p.get("file") else f"line {p['line']}"
        print(f"Primary: {p['class']} ({p['verdict']}) at {loc}: {p['evidence']}")
        print(likely_line(res))
        print(f"Advice: {p['advice']}")
        fix = remedy_text(p.get("remedy"))
        if fix:
            print("Remedy: " + fix)
    others = [
        f for f in res.get("findings") or [] if not p or f["line"] != p["line"] or f["class"] != p["class"]
    ]
    if others:
        print("Other findings:")
        for f in others[:30]:
            print(
                f"  {f['verdict']:<7} {f['class']:<24} line {f['line']} (x{f['count']}): {f['evidence'][:160]}"
            )


def likely_line(res: Mapping[str, Any]) -> str:
    """ "likely X (confidence c, lines ...); also consistent with Y, Z" for the primary finding."""
    p = res.get("primary") or {}
    lines = ", ".join(str(n) for n in (p.get("lines") or [p.get("line")])[:6])
    text = f"Cause: likely {p.get('class')} (confidence {p.get('confidence', 0):.2f}, lines {lines})"
    alts = [a["class"] for a in res.get("alternatives") or []]
    return text + (f"; also consistent with {', '.join(alts)}" if alts else "")


def cmd_triage(args: argparse.Namespace) -> int:
    from console.triage.scan import triage_files

    framework = args.framework
    if framework is not None and framework not in ("nemo-rl", "verl", "demo", "unknown"):
        raise ConsoleError(f"--framework {framework!r}: expected nemo-rl, verl, demo or unknown")
    res = triage_files(args.logs, framework=framework, exit_code=args.exit_code)
    if args.json:
        sys.stdout.write(json.dumps(res, indent=2) + "\n")
    else:
        _print_human(res)
    return exitcodes.for_verdict(res["verdict"])
