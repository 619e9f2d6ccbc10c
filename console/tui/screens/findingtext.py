"""One finding said in full: cause, advice, remedy and its evidence line, for Triage and Findings."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from console.commandtext import remedy_text
from console.tui import backend


def finding_text(
    finding: dict[str, Any], primary: dict[str, Any] | None, framework: str | None, *, fix_key: bool = False
) -> Text:
    """``finding`` in full: the primary's advice and remedy are the triage's own, else the class's."""
    cls = str(finding.get("class") or "")
    is_primary = bool(primary and primary.get("class") == cls and primary.get("line") == finding.get("line"))
    try:
        info = backend.failure_class(cls, framework or "")
    except Exception:  # noqa: BLE001 - an unknown class still shows its evidence
        info = {}
    own = primary if is_primary and primary else {}
    advice = own.get("advice") or info.get("advice")
    fix = remedy_text(own["remedy"] if own.get("remedy") is not None else info.get("remedy") or {})
    text = Text()
    text.append(f"{finding.get('class')}", style="bold")
    text.append(f" ({finding.get('verdict')})")
    if is_primary:
        text.append("  primary cause", style="bold red")
    text.append("\ncause: ", style="bold")
    text.append(str(info.get("title") or cls))
    text.append(f"\nline {finding.get('line')}: ", style="bold")
    text.append(str(finding.get("evidence") or "")[:400], style="italic")
    text.append("\nremedy: ", style="bold")
    text.append(fix or "none automatic (follow the advice)")
    if fix and fix_key and is_primary:
        text.append("   f: rerun with it", style="bold")
    if advice:
        text.append("\nadvice: ", style="bold")
        text.append(str(advice))
    return text
