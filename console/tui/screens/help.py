"""Help: every binding of every screen, and the promise that quitting never stops runs."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP_TEXT = """\
[b]rl-console keys[/b]  (keyboard only; ctrl+p: command palette)

[b]Everywhere[/b] ?  help    t  theme: dark/light/high-contrast (kept)
           esc  back    q  quit the console: [b]runs keep going[/b],
           reopen it to see them live (runs from the CLI show too)

[b]Home[/b]       n  new run    enter  open run    l  open a log (triage)
           r  report     c  cancel run (asks first)
           m  mark baseline    C  compare: marked vs highlighted run,
           or it vs the latest run like it

[b]Monitor[/b]    1-6  tabs: Log Steps Metrics System Findings Verdict
           /  search     n N  next/previous match
           F  filter to matching lines    w  wrap
           space  follow/pause    \\[ ]  previous/next step's log
           f  rerun with fix    enter on a finding: go to its line
           (anywhere in the file)    r  report    c  cancel run
           C  compare (the marked baseline or the latest run like it)

[b]Compare[/b]    s  swap sides    r  refresh
[b]Report[/b]     s  save to report.md    c  copy (terminal clipboard)
[b]Triage[/b]     up/down  findings: cause, evidence, remedy, advice
           enter/g  go to its line (any size of log)   o  open a log
[b]New run[/b]    tab  next question   space  tick   (the guide at the
           bottom says why)  F2 preview  F3 preflight  ctrl+l launch
[b]Notify[/b]     bell, tmux message, OSC 9 when a run changes state:
           ctrl+p "Notify by ..." switches each one
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(HELP_TEXT)
