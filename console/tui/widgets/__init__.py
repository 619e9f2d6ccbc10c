"""Widgets of the console (Textual)."""
