"""Secret redaction for anything that leaves advisor: trace text we did not write can carry secrets.

Exporters embed environment dumps and command lines (nsys TARGET_INFO_SYSTEM_ENV, Kineto metadata).
The model never stores environment values, but free-text notes and metadata may still hold
`NAME=value` pairs or token-shaped words; every surface passes such text through `redact` first.
"""

from __future__ import annotations

import re
from typing import Any

# Key names whose values must never be shown (environment variables, tokens in notes/metadata).
SECRET_KEY = re.compile(r"TOKEN|SECRET|KEY|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
# NAME=value / NAME: value inside free text (a captured command line or an env dump in one string).
_SECRET_ASSIGN = re.compile(
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:TOKEN|SECRET|KEY|PASSW|CREDENTIAL|AUTH)[A-Za-z0-9_]*)"
    r"(?P<sep>\s*[=:]\s*)(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;\"'}]+)",
    re.IGNORECASE,
)
# Well-known token shapes, redacted even without a telling name next to them.
_TOKEN_SHAPES = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16})\b"
)
REDACTED = "[redacted]"


def redact_text(text: str) -> str:
    """`text` with secret-named assignments and token-shaped words replaced by [redacted]."""
    text = _SECRET_ASSIGN.sub(lambda m: f"{m.group('name')}{m.group('sep')}{REDACTED}", text)
    return _TOKEN_SHAPES.sub(REDACTED, text)


def redact(value: Any) -> Any:
    """A deep copy of `value` with secret-named keys dropped and secret-looking text redacted.

    Keys are dropped rather than masked: even the presence of e.g. `WANDB_API_KEY` is nobody's
    business in a report attached to a public pull request.
    """
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items() if not SECRET_KEY.search(str(k))}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
