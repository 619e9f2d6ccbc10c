"""`rl-console` command line: a thin view over the headless core.

Each subcommand's handler is in this package (``console/cli/<area>.py``; the console's own ``tui``
and ``status`` in ``console.tui``), has the signature ``handler(args) -> int`` returning the exit
code, and is imported only when its command runs (``status`` runs from a tmux status line and must
not pay for Hydra or the triage catalog).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from types import ModuleType

from console import __version__
from console.errors import ConsoleError
from console.spec import add_spec_arguments

Handler = Callable[[argparse.Namespace], int]
NEEDS_TERMINAL = ("demo", "tui")  # with stdout not a terminal these fall back to headless output


def sample_log(name: str) -> str:
    """A shipped sample log by its bare name (``nemo-rl-grpo-megatron.log``) when no such file is here."""
    from pathlib import Path

    sample = Path(__file__).parent.parent / "demo" / "samples" / name
    return str(sample) if not Path(name).exists() and "/" not in name and sample.is_file() else name


def catalog_epilog() -> str:
    """Levels and variants of every framework, from the catalog (for ``plan``/``run --help``)."""
    from console.catalog import load_framework
    from console.spec import FRAMEWORKS

    lines = ["levels and variants (from the catalog):"]
    for name in FRAMEWORKS:
        try:
            cat = load_framework(name)
        except Exception:  # noqa: BLE001 - help must never fail
            continue
        lines.append(f"  {name}:")
        lines += [f"    --level {lv.number}  {lv.title}" for lv in cat.levels]
        lines += [
            f"    --variant {v.name}  (Level {'/'.join(map(str, v.levels))}) {v.title}" for v in cat.variants
        ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rl-console",
        description="Validate Megatron-Bridge changes inside NeMo-RL and verl RL loops.",
    )
    p.add_argument("--theme", default=None, help="TUI theme (dark, light, high-contrast)")
    p.add_argument("--version", action="version", version=f"rl-console {__version__}")
    p.set_defaults(runs_dir=None, open_run=None, log=None)  # no command: the console, as `tui` opens it
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    sp = sub.add_parser("plan", help="print the steps (argv, env, cwd) without running")
    add_spec_arguments(sp)
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--format", choices=("text", "json", "sh"), default=None)

    sp = sub.add_parser("run", help="run a plan")
    add_spec_arguments(sp)
    sp.add_argument("--headless", action="store_true", help="print progress lines, end with the verdict")
    sp.add_argument("--detach", action="store_true", help="return as soon as the run started")
    sp.add_argument("--no-doctor", action="store_true", help="skip the preflight checks")
    sp.add_argument(
        "--baseline",
        metavar="REF",
        help="first run the same plan with the Bridge checkout at REF (a git worktree), then "
        "this one, then compare them",
    )

    sp = sub.add_parser("ls", help="list runs")
    sp.add_argument("--runs-dir", default=None)
    sp.add_argument("--json", action="store_true")

    sp = sub.add_parser("show", help="show a run's state and verdict")
    sp.add_argument("run")
    sp.add_argument("--runs-dir", default=None)
    sp.add_argument("--json", action="store_true")

    sp = sub.add_parser("attach", help="follow a run started earlier")
    sp.add_argument("run")
    sp.add_argument("--runs-dir", default=None)
    sp.add_argument("--headless", action="store_true")

    sp = sub.add_parser("cancel", help="stop a run and its whole process tree")
    sp.add_argument("run")
    sp.add_argument("--runs-dir", default=None)
    sp.add_argument("--grace", type=float, default=10.0, help="seconds between SIGINT/SIGTERM/SIGKILL")

    sp = sub.add_parser("demo", help="launch the embedded demo run and monitor it")
    sp.add_argument("--headless", action="store_true")
    sp.add_argument("--variant", dest="variants", action="append", default=[], help="e.g. nan")
    sp.add_argument("--runs-dir", default=None)
    sp.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")

    sp = sub.add_parser("replay", help="re-emit a recorded log as a live run")
    sp.add_argument("log")
    sp.add_argument("--speed", type=float, default=1.0)
    sp.add_argument("--framework", default=None)
    sp.add_argument("--runs-dir", default=None)
    sp.add_argument("--headless", action="store_true")
    sp.add_argument("--detach", action="store_true")

    sp = sub.add_parser("triage", help="post-mortem triage of any log file")
    sp.add_argument("logs", nargs="+", metavar="LOG")
    sp.add_argument("--framework", default=None)
    sp.add_argument("--exit-code", type=int, default=None)
    sp.add_argument("--json", action="store_true")

    sp = sub.add_parser("report", help="the summary report of a run")
    sp.add_argument("run")
    sp.add_argument("--runs-dir", default=None)
    sp.add_argument("--format", choices=("md", "json"), default="md")
    sp.add_argument(
        "--recompute",
        action="store_true",
        help="recompute the verdict from the run folder instead of the one recorded at its end",
    )

    sp = sub.add_parser("doctor", help="preflight checks only")
    add_spec_arguments(sp)
    sp.add_argument("--json", action="store_true")

    sp = sub.add_parser("compare", help="baseline vs candidate: did the numbers move?")
    # the arguments are declared here, not in console.compare: importing that package pulls in the
    # plan builder (hydra), which every other command would then pay for at start-up
    sp.add_argument("baseline", metavar="BASE", help="baseline run: id, unique prefix, path or 'last'")
    sp.add_argument("candidate", metavar="CANDIDATE", help="candidate run: id, unique prefix, path or 'last'")
    sp.add_argument("--runs-dir", default=None)
    sp.add_argument("--json", action="store_true", help="the whole comparison as JSON (for scripts)")
    sp.add_argument(
        "--tolerance",
        action="append",
        default=[],
        metavar="METRIC=REL[,ABS]",
        help="override a metric's tolerance (repeatable), e.g. reward=0.1,0.02",
    )
    sp.add_argument(
        "--last-k",
        type=int,
        metavar="K",
        help="means over the last K common steps (default from compare.toml)",
    )

    sp = sub.add_parser("tui", help="open the console (same as no command)")
    sp.add_argument("--runs-dir", default=None)
    sp.add_argument("--open", dest="open_run", default=None, help="open this run's monitor")
    sp.add_argument("--log", default=None, help="open a log file in the triage screen")

    sp = sub.add_parser(
        "status", help="one short line about the runs (for a shell prompt or tmux status-right)"
    )
    sp.add_argument("--runs-dir", default=None)
    sp.add_argument(
        "--tmux",
        action="store_true",
        help="with tmux colour codes: set -g status-right '#(rl-console status --tmux)'",
    )

    for action in sub._choices_actions:  # every subcommand's --help starts with what it does
        sub.choices[action.dest].description = action.help
    if {"-h", "--help"} & set(sys.argv[1:]):  # reading the catalogs costs ~0.2 s: only for help
        epilog = catalog_epilog()
        for name in ("plan", "run"):
            sub.choices[name].epilog = epilog
            sub.choices[name].formatter_class = argparse.RawDescriptionHelpFormatter
    return p


def handler_for(command: str) -> Handler:
    """The handler of ``command``: ``cmd_<command>`` of its module, imported only when chosen."""
    module: ModuleType
    if command in ("run", "ls", "show", "attach", "cancel", "demo", "replay"):
        from console.cli import runs as module
    elif command == "plan":
        from console.cli import plan as module
    elif command == "triage":
        from console.cli import triage as module
    elif command == "report":
        from console.cli import report as module
    elif command == "doctor":
        from console.cli import doctor as module
    elif command == "compare":
        from console.cli import compare as module
    elif command == "tui":
        from console.tui import launch as module
    elif command == "status":
        from console.tui import statusline as module
    else:
        raise KeyError(command)
    handler: Handler = getattr(module, f"cmd_{command}")
    return handler


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command = args.command or "tui"
    if command == "replay":
        args.log = sample_log(args.log)
    if command in NEEDS_TERMINAL and not sys.stdout.isatty():
        if command == "demo":
            args.headless = True  # progress lines and the verdict, no escape codes into a pipe
        else:
            print(
                "rl-console: stdout is not a terminal: listing runs instead of opening the console",
                file=sys.stderr,
            )
            command, args.json = "ls", False
    try:
        handler = handler_for(command)
        return int(handler(args) or 0)
    except ConsoleError as exc:
        print(f"rl-console {command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a full disk, an unwritable or missing folder: one line, never a traceback
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"rl-console {command}: error:{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
