"""Hydra overrides: parsed with Hydra's own grammar, checked against the framework's config.

NeMo-RL and verl apply overrides in OmegaConf struct mode: an unknown key fails the run minutes
later ("Could not override ..."), so we refuse it now, unless it is prefixed ``+``/``++``.
The keys come from the YAML the step runs with, with its ``defaults`` chain merged as NeMo-RL's
``load_config_with_inheritance`` does (parents first, ``_override_: true`` replaces a subtree).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.errors import HydraException
from omegaconf import OmegaConf

from console.errors import SpecError

GLOB_CHARS = set("*?[")


class ConfigUnavailable(Exception):
    """The config (or a parent in its defaults chain) cannot be read; key checks are skipped."""


@lru_cache(maxsize=1)
def _parser() -> OverridesParser:
    return OverridesParser.create()


def parse_override(text: str) -> Override:
    """Parse one override with Hydra's grammar; SpecError (one line) when it does not parse."""
    if "\x00" in text:
        raise SpecError(f"override {text!r}: contains a NUL character")
    try:
        (override,) = _parser().parse_overrides([text])
    except HydraException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpecError(f"override {text!r} does not parse as a Hydra override: {first}") from None
    except Exception as exc:  # the ANTLR layer can raise other errors on odd input
        raise SpecError(f"override {text!r} does not parse as a Hydra override: {exc}") from None
    if not override.key_or_group:
        raise SpecError(f"override {text!r} has no key (expected key=value)")
    if override.is_sweep_override():
        raise SpecError(
            f"override {text!r} is a sweep (unquoted ','); quote the value (key='a,b') "
            "or use a list (key=[a,b])"
        )
    return override


def _merge(base: dict[str, Any], child: Mapping[Any, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in child.items():
        if isinstance(value, dict) and value.get("_override_") is True:
            out[key] = {k: v for k, v in value.items() if k != "_override_"}
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _load(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    if path in seen:
        raise ConfigUnavailable(f"{path}: defaults chain loops")
    if not path.is_file():
        raise ConfigUnavailable(f"{path} not found")
    try:
        raw = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    except Exception as exc:
        raise ConfigUnavailable(f"{path}: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigUnavailable(f"{path}: not a mapping")
    defaults = raw.pop("defaults", None)
    parents = [defaults] if isinstance(defaults, str) else (defaults or [])
    merged: dict[str, Any] = {}
    for parent in parents:
        if parent == "_self_":
            continue
        if not isinstance(parent, str):
            raise ConfigUnavailable(f"{path}: Hydra group defaults ({parent!r}) are not merged here")
        name = parent if parent.endswith((".yaml", ".yml")) else f"{parent}.yaml"
        merged = _merge(merged, _load((path.parent / name).resolve(), (*seen, path)))
    return _merge(merged, raw)


@lru_cache(maxsize=32)
def _load_cached(path: str, mtime: float) -> dict[str, Any]:
    return _load(Path(path))


def load_config(path: str | Path) -> dict[str, Any]:
    """The YAML with its defaults chain merged (plain dicts, interpolations left as text)."""
    p = Path(path).resolve()
    if not p.is_file():
        raise ConfigUnavailable(f"{p} not found")
    return _load_cached(str(p), p.stat().st_mtime)


def flat_keys(cfg: Any, prefix: str = "") -> list[str]:
    keys: list[str] = []
    if isinstance(cfg, dict):
        for key, value in cfg.items():
            full = f"{prefix}.{key}" if prefix else str(key)
            keys.append(full)
            keys.extend(flat_keys(value, full))
    return keys


def has_key(cfg: dict[str, Any], dotted: str) -> bool:
    node: Any = cfg
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def did_you_mean(key: str, keys: list[str]) -> str | None:
    leaf = key.rsplit(".", 1)[-1]
    same_leaf = [k for k in keys if k.rsplit(".", 1)[-1] == leaf]
    pool = same_leaf + difflib.get_close_matches(key, keys, n=3, cutoff=0.6)
    return max(pool, key=lambda k: difflib.SequenceMatcher(None, key, k).ratio()) if pool else None


def check_unquoted(text: str, script: str) -> list[str]:
    """Refuse what a wrapper's unquoted ``$@`` would split; warn about glob characters."""
    if any(c.isspace() for c in text):
        raise SpecError(
            f"override {text!r} contains whitespace: {script} forwards $@ unquoted, so bash "
            "would split it into several arguments; refused (no quoting survives that split)"
        )
    if GLOB_CHARS & set(text):
        return [
            f"override {text!r} contains glob characters ({''.join(sorted(GLOB_CHARS & set(text)))}); "
            f"{script} forwards $@ unquoted, so bash expands it if a matching file exists in its cwd"
        ]
    return []


def check_keys(overrides: list[Override], cfg: dict[str, Any], source: str) -> list[str]:
    """SpecError for an unknown plain key or a '+' on an existing key; warnings for '++' on new keys."""
    warnings: list[str] = []
    keys: list[str] | None = None
    for o in overrides:
        key = o.key_or_group
        if "/" in key or o.package is not None:
            continue  # a Hydra config group choice, not a config key
        present = has_key(cfg, key)
        if o.type is OverrideType.ADD and present:
            raise SpecError(
                f"override {o.input_line!r}: {key} already exists in {source}; drop the '+' "
                f"(or use '++' to add or override)"
            )
        if o.type in (OverrideType.CHANGE, OverrideType.DEL) and not present:
            keys = keys if keys is not None else flat_keys(cfg)
            hint = did_you_mean(key, keys)
            suggestion = f"did you mean {hint!r}? " if hint else ""
            raise SpecError(
                f"override {o.input_line!r}: {key!r} is not a key of {source}; {suggestion}"
                f"prefix '+' to add it or '++' to add or override"
            )
        if o.type is OverrideType.FORCE_ADD and not present:
            warnings.append(
                f"override {o.input_line!r} adds {key!r}, which {source} does not have: "
                "check the code reads it, or the run proves nothing about it"
            )
    return warnings


def with_keys(cfg: dict[str, Any], keys: set[str] | None) -> dict[str, Any]:
    """A copy of ``cfg`` that also holds the dotted ``keys`` (e.g. the ones a wrapper adds with '+')."""
    if not keys:
        return cfg
    out = _merge({}, cfg)
    for dotted in sorted(keys):
        node = out
        parts = dotted.split(".")
        for part in parts[:-1]:  # copies on the way down: ``cfg`` stays as it is
            nxt = node.get(part)
            node[part] = dict(nxt) if isinstance(nxt, dict) else {}
            node = node[part]
        node.setdefault(parts[-1], None)
    return out


def validate_overrides(
    overrides: list[str],
    repo: str | None = None,
    config: str | None = None,
    *,
    unquoted_script: str | None = None,
    extra_keys: set[str] | None = None,
) -> list[str]:
    """Check user overrides; raise SpecError (one line) on the first bad one, return warnings.

    ``config`` is the YAML to check keys against (relative to ``repo`` unless absolute); with only
    ``repo``, the catalog's Level 0 config found in it is used. Without either, or when it cannot be
    read, only the syntax is checked (and a warning says so when one was named).
    ``unquoted_script`` names a wrapper that forwards ``$@`` unquoted: whitespace is then refused.
    ``extra_keys`` are dotted keys that count as present (the ones the wrapper adds before ``$@``).
    """
    warnings: list[str] = []
    parsed = []
    for text in overrides:
        if not isinstance(text, str) or not text:
            raise SpecError(f"override {text!r}: empty")
        if unquoted_script:
            warnings.extend(check_unquoted(text, unquoted_script))
        parsed.append(parse_override(text))
    if config is None and repo:
        config = default_config(repo)
    if config:
        path = Path(config) if Path(config).is_absolute() or repo is None else Path(repo) / config
        try:
            cfg = load_config(path)
        except ConfigUnavailable as exc:
            warnings.append(f"override keys not checked: {exc}")
        else:
            warnings.extend(check_keys(parsed, with_keys(cfg, extra_keys), config))
    return warnings


def default_config(repo: str) -> str | None:
    """The config of the first Level 0 training step of a framework whose config exists in ``repo``."""
    from console.catalog import known_frameworks, load_framework

    for name in known_frameworks():
        cat = load_framework(name)
        for level in cat.levels:
            for st in level.steps:
                if st.kind == "train" and st.config and (Path(repo) / st.config).is_file():
                    return st.config
    return None


def effective_values(args: list[str]) -> dict[str, str]:
    """key -> value text of the plain/forced overrides among ``args`` (later ones win, as in Hydra)."""
    values: dict[str, str] = {}
    for arg in args:
        if ("=" not in arg and not arg.startswith("~")) or arg.startswith("-"):
            continue
        try:
            (o,) = _parser().parse_overrides([arg])
        except Exception:
            continue
        if o.is_delete() or o.is_sweep_override():
            values.pop(o.key_or_group, None)
            continue
        values[o.key_or_group] = arg.split("=", 1)[1] if "=" in arg else ""
    return values
