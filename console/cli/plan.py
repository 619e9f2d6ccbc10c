"""`rl-console plan SPEC... [--json | --format text|json|sh]`."""

from __future__ import annotations

import argparse
import json
import sys

from console.commandtext import command_line
from console.plan.builder import build_plan
from console.plan.model import Plan
from console.plan.render import render_sh
from console.redact import redact_text
from console.spec import spec_from_args


def render_text(plan: Plan) -> str:
    lines = [f"warning: {redact_text(w)}" for w in plan.warnings]
    lines += [f"catalog_drift: {redact_text(str(d.get('message')))}" for d in plan.drift]
    for i, s in enumerate(plan.steps, 1):
        lvl = "" if s.level is None else f" L{s.level}"
        lines.append(f"{i:02d} {s.name}{lvl} [{s.kind}/{s.deliverable}] gpus={s.gpus}")
        lines.append(f"   cwd: {s.cwd}")
        env = command_line({"env": s.env, "unset": s.unset})  # "env -u NAME KEY=VALUE", or ""
        lines += [f"   {env}"] if env else []
        lines.append("   $ " + command_line(s.argv))
    return "\n".join(lines) + "\n"


def cmd_plan(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    plan = build_plan(spec, manifest_fallback=True)  # no checkout: resolved on the upstream manifest
    fmt = "json" if getattr(args, "json", False) else (getattr(args, "format", None) or "text")
    if fmt == "json":
        sys.stdout.write(json.dumps(plan.to_dict(), indent=2) + "\n")
    elif fmt == "sh" and spec.launcher == "slurm":
        from pathlib import Path

        from console.runs.slurm.script import render  # the sbatch submission, as it would be sent

        run_dir = Path(spec.runs_dir).expanduser().resolve() / "RUN-ID"
        sys.stdout.write(render(run_dir, plan, spec).preview())
    elif fmt == "sh":
        sys.stdout.write(render_sh(plan))
    else:
        sys.stdout.write(render_text(plan))
    for w in plan.warnings if fmt != "text" else []:
        print(f"rl-console plan: warning: {redact_text(w)}", file=sys.stderr)
    for d in plan.drift if fmt != "text" else []:
        print(f"rl-console plan: catalog_drift: {redact_text(str(d.get('message')))}", file=sys.stderr)
    return 0
