"""Exceptions shared by the headless core. Each maps to a CLI exit code."""

from __future__ import annotations


class ConsoleError(Exception):
    """Base class for errors the user should see as one clear line."""

    exit_code = 2


class SpecError(ConsoleError):
    """Bad input: unknown level, bad override, missing repo... (exit 2)."""

    exit_code = 2


class RunNotFound(ConsoleError):
    exit_code = 2
