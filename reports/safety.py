"""Keeping trace-borne text harmless in a report: secret redaction and JSON safe inside <script>.

Traces carry text we did not write (kernel names, NVTX messages, command lines, environment dumps
in exporter metadata). Jinja's autoescape covers HTML text and attributes; these helpers cover the
two places autoescape cannot: JSON inside a <script> element (raw text, where entities are not
decoded) and secret values hidden under innocent-looking metadata keys.
"""

from __future__ import annotations

import json
import re
from typing import Any

from markupsafe import Markup

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


_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_SCRIPT_UNSAFE = re.compile("[<>&\u2028\u2029]")


def script_json(value: Any) -> Markup:
    """JSON for a <script type="application/json"> element: no `</script>`, `<!--` or line separators.

    Inside <script> the browser does not decode entities, so HTML-escaping would corrupt the JSON;
    instead every `<`, `>`, `&` and U+2028/U+2029 becomes a JSON \\u escape (same value once parsed).
    """
    text = json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False)
    return Markup(_SCRIPT_UNSAFE.sub(lambda m: _SCRIPT_ESCAPES[m.group(0)], text))  # noqa: S704 - escaped above
