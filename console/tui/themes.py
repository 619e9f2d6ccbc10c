"""Themes from ``console/tui/theme_files/`` (one TOML file per Textual ``Theme``; package data, so a
wheel install has them too)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from textual.theme import Theme

from console.catalog import CatalogError, load_toml

THEME_FIELDS = {f.name for f in fields(Theme)} - {"name", "variables"}  # the colours a file may set
DEFAULT_THEME = "dark"
FALLBACK_THEMES = {"dark": "textual-dark", "light": "textual-light", "high-contrast": "textual-ansi"}


def themes_dir() -> Path:
    """The theme files shipped inside the package (checkouts, editable and wheel installs alike)."""
    return Path(__file__).resolve().parent / "theme_files"


@dataclass
class LoadedThemes:
    themes: list[Theme] = field(default_factory=list)
    notice: str | None = None  # shown once to the user when something was off


def load_themes(folder: Path | None = None) -> LoadedThemes:
    """Parse every ``*.toml`` in ``folder``; a broken file is skipped with a notice, never fatal."""
    folder = folder or themes_dir()
    result = LoadedThemes()
    if not folder.is_dir():
        result.notice = f"themes folder {folder} not found: using Textual's built-in themes"
        return result
    problems: list[str] = []
    order = {name: i for i, name in enumerate(("dark", "light", "high-contrast"))}
    for path in sorted(folder.glob("*.toml"), key=lambda p: (order.get(p.stem, 99), p.stem)):
        try:
            data = load_toml(path)
            kwargs = {k: data[k] for k in THEME_FIELDS if k in data}
            name = str(data.get("name") or path.stem)
            result.themes.append(Theme(name=name, variables=dict(data.get("variables", {})), **kwargs))
        except (CatalogError, TypeError, KeyError) as exc:
            problems.append(f"{path.name}: {exc}")
    if problems:
        result.notice = "skipped theme file(s): " + "; ".join(problems)
    elif not result.themes:
        result.notice = f"no themes in {folder}: using Textual's built-in themes"
    return result


def resolve_theme_name(wanted: str | None, available: list[str]) -> str:
    """Map a requested theme (ours or a Textual name) to one that is registered."""
    name = wanted or DEFAULT_THEME
    if name in available:
        return name
    fallback = FALLBACK_THEMES.get(name)
    if fallback and fallback in available:
        return fallback
    return DEFAULT_THEME if DEFAULT_THEME in available else "textual-dark"
