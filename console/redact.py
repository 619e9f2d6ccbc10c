"""Keep tokens and keys out of files, screens and reports: the one place that decides what a secret is.

Redaction works on structure, before serialization: an environment mapping (``redact_env``), an argv
list (``redact_argv``: ``KEY=VALUE`` overrides, ``--flag=value`` and ``--flag value`` whose name is
secret, token-shaped values anywhere), a JSON-like object (``redact_obj``: every string inside, keys
kept) and free text (``redact_text``: known secret values, token shapes, ``NAME=value`` assignments).
Names are judged word by word with the allow-list of ``console/catalog/redaction.toml`` (verl's
``data.reward_fn_key`` is not a secret).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from typing import Any

from console.catalog.schema import RedactionCatalog, load_checked

MASK = "***"
# Values that look like well-known tokens wherever they appear in text.
_SECRET_VALUE_RES = [  # (a lower-case hint that must be in the text, the pattern)
    ("hf_", re.compile(r"\bhf_[A-Za-z0-9]{20,}\b")),  # Hugging Face
    ("gh", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b")),  # GitHub
    ("github_pat_", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b")),
    ("sk-", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b")),  # OpenAI-style
    ("nvapi-", re.compile(r"\bnvapi-[A-Za-z0-9_-]{20,}\b")),  # NVIDIA NGC
    ("xox", re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}\b")),  # Slack
    ("akia", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),  # AWS access key id
]
_NAME_HINTS = ("token", "key", "secret", "passw", "passphrase", "credential", "auth", "pat", "bearer")
# NAME=value / NAME: value in free text; the value ends at whitespace, a quote or a separator.
# Only names holding a secret word are candidates (fast on long logs); is_secret_name decides.
_ASSIGN_RE = re.compile(
    r"(?<![\w.-])([A-Za-z_][\w.-]*?(?:token|key|secret|passw|passphrase|credential|auth|pat|bearer)[\w.-]*)"
    r"(=[\"']?|: ?[\"']?)([^\s\"',;}\]]+)",
    re.IGNORECASE,
)
_WORD_SPLIT_RE = re.compile(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])")
MIN_SECRET_LEN = 4  # shorter known values ("1", "on") are not replaced literally in text


@cache
def _rules() -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...]]:
    data = load_checked("redaction", RedactionCatalog)
    return (
        frozenset(w.lower() for w in data["secret_words"]),
        tuple(f.lower() for f in data.get("secret_fragments") or ()),
        tuple(p.lower() for p in data.get("not_secret") or ()),
    )


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True for an env name, override key or flag naming a secret (``HF_TOKEN``, ``wandb.api_key``,
    ``--hf-token``); False for look-alikes on the allow-list (``data.reward_fn_key``, ``max_tokens``)."""
    part = str(name).strip().lstrip("+~-").rsplit(".", 1)[-1]  # what names the value: ++a.api_key
    if not part:
        return False
    words, fragments, allowed = _rules()
    low = part.lower().replace("-", "_")
    if any(fnmatch.fnmatchcase(low, pat) for pat in allowed):
        return False
    parts = [p.lower() for p in _WORD_SPLIT_RE.split(part) if p]
    return any(p in words for p in parts) or any(p.endswith(f) for p in parts for f in fragments)


def _value_is_secret_shaped(value: str) -> bool:
    low = value.lower()
    return any(hint in low and rx.search(value) for hint, rx in _SECRET_VALUE_RES)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in env.items()}


def secret_argv_positions(argv: list[str]) -> dict[int, tuple[str, str]]:
    """``{index: (prefix, secret)}`` for each argv word holding a secret: ``KEY=VALUE`` and
    ``--flag=value`` with a secret name (prefix ``KEY=``), the word after a secret ``--flag``, and
    words with a token-shaped value (prefix up to the ``=``, or empty)."""
    out: dict[int, tuple[str, str]] = {}
    for i, arg in enumerate(argv):
        if not isinstance(arg, str) or not arg:
            continue
        name, eq, value = arg.partition("=")
        if (
            eq
            and value
            and value != MASK
            and re.fullmatch(r"[+~-]*[A-Za-z_][\w.\-/]*", name)
            and is_secret_name(name)
        ):
            out[i] = (name + "=", value)
        elif _value_is_secret_shaped(arg):
            out[i] = (
                (name + "=", value)
                if eq and _value_is_secret_shaped(value) and not _value_is_secret_shaped(name)
                else ("", arg)
            )
        elif i > 0 and i - 1 not in out and arg != MASK:
            prev = argv[i - 1]
            if (
                isinstance(prev, str)
                and prev.startswith("-")
                and "=" not in prev
                and re.fullmatch(r"--?[A-Za-z][\w-]*", prev)
                and is_secret_name(prev)
                and not arg.startswith("-")
            ):
                out[i] = ("", arg)
    return out


def redact_argv(argv: list[str]) -> list[str]:
    out = list(argv)
    for i, (prefix, _secret) in secret_argv_positions(out).items():
        out[i] = prefix + MASK
    return out


def _assign(m: re.Match[str]) -> str:
    name, sep, value = m.group(1), m.group(2), m.group(3)
    if value == MASK or not is_secret_name(name):
        return m.group(0)
    return f"{name}{sep}{MASK}"


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Free text (a log line, an evidence string, a command line): known secret values, token-shaped
    values and ``NAME=value`` assignments with a secret name are replaced by ``***``.

    Fast on long logs: a regex only runs on the lines holding its hint (plain substring tests)."""
    if not text:
        return text
    for value in sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LEN}, key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    low = text.lower()
    if any(hint in low for hint in _NAME_HINTS):
        lines = text.split("\n")
        for i, line in enumerate(lines):
            line_low = line.lower()
            if any(hint in line_low for hint in _NAME_HINTS):
                lines[i] = _ASSIGN_RE.sub(_assign, line)
        text = "\n".join(lines)
        low = text.lower()
    for hint, rx in _SECRET_VALUE_RES:
        if hint in low:
            text = rx.sub(MASK, text)
    return text


def redact_obj(obj: Any, secrets: Iterable[str] = ()) -> Any:
    """A JSON-like object with every string redacted (``redact_text``), mappings with secret keys
    masked by name; structure and non-string values are kept. Never works on serialized JSON."""
    secrets = tuple(secrets)
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    if isinstance(obj, Mapping):
        return {
            k: (
                MASK
                if isinstance(v, str) and v and isinstance(k, str) and k.isupper() and is_secret_name(k)
                else redact_obj(v, secrets)
            )
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [redact_obj(v, secrets) for v in obj]
    return obj


def secret_values(env: Mapping[str, str]) -> list[str]:
    """The values of secret-named variables (to redact them literally from output)."""
    return [v for k, v in env.items() if v and v != MASK and is_secret_name(k) and len(v) >= MIN_SECRET_LEN]
