"""Keep tokens and keys out of files, screens and reports."""

from __future__ import annotations

import re
from collections.abc import Mapping

SECRET_NAME_RE = re.compile(r"(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
# Values that look like well-known tokens wherever they appear in text.
_SECRET_VALUE_RES = [
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),  # Hugging Face
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),  # GitHub
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"),  # OpenAI-style
    re.compile(r"\b[a-f0-9]{40}\b(?=.*(?:wandb|WANDB))"),  # W&B keys next to their name
]
_ASSIGN_RE = re.compile(
    r"\b([A-Za-z_][A-Za-z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL)[A-Za-z0-9_]*)=(\S+)",
    re.IGNORECASE,
)
MASK = "***"


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME_RE.search(name))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in env.items()}


def redact_text(text: str) -> str:
    text = _ASSIGN_RE.sub(lambda m: f"{m.group(1)}={MASK}", text)
    for rx in _SECRET_VALUE_RES:
        text = rx.sub(MASK, text)
    return text
