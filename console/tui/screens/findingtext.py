"""One finding said in full: cause, advice, remedy and its evidence line, for Triage and Findings."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from console.commandtext import remedy_text
from console.tui import backend


def explain(finding: dict[str, Any], primary: dict[str, Any] | None, framework: str | None) -> dict[str, Any]:
    """cause/advice/remedy of ``finding``: the triage's own for the primary, else the class's."""
    cls = str(finding.get("class") or "")
    is_primary = bool(primary and primary.get("class") == cls and primary.get("line") == finding.get("line"))
    try:
        info = backend.failure_class(cls, framework or "")
    except Exception:  # noqa: BLE001 - an unknown class still shows its evidence
        info = {}
    advice = (primary or {}).get("advice") if is_primary else None
    remedy = (primary or {}).get("remedy") if is_primary else None
    return {
        "cause": info.get("title") or cls,
        "advice": advice or info.get("advice") or "",
        "remedy": remedy if remedy is not None else info.get("remedy") or {},
        "primary": is_primary,
    }


def finding_text(
    finding: dict[str, Any], primary: dict[str, Any] | None, framework: str | None, *, fix_key: bool = False
) -> Text:
    why = explain(finding, primary, framework)
    text = Text()
    text.append(f"{finding.get('class')}", style="bold")
    text.append(f" ({finding.get('verdict')})")
    if why["primary"]:
        text.append("  primary cause", style="bold red")
    text.append("\ncause: ", style="bold")
    text.append(str(why["cause"]))
    text.append(f"\nline {finding.get('line')}: ", style="bold")
    text.append(str(finding.get("evidence") or "")[:400], style="italic")
    fix = remedy_text(why["remedy"])
    text.append("\nremedy: ", style="bold")
    text.append(fix or "none automatic (follow the advice)")
    if fix and fix_key and why["primary"]:
        text.append("   f: rerun with it", style="bold")
    if why["advice"]:
        text.append("\nadvice: ", style="bold")
        text.append(str(why["advice"]))
    return text
