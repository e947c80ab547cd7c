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

from advisor.redact import REDACTED, SECRET_KEY, redact, redact_text

__all__ = ["REDACTED", "SECRET_KEY", "redact", "redact_text", "script_json"]

_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_SCRIPT_UNSAFE = re.compile("[<>&\u2028\u2029]")


def script_json(value: Any) -> Markup:
    """JSON for a <script type="application/json"> element: no `</script>`, `<!--` or line separators.

    Inside <script> the browser does not decode entities, so HTML-escaping would corrupt the JSON;
    instead every `<`, `>`, `&` and U+2028/U+2029 becomes a JSON \\u escape (same value once parsed).
    """
    text = json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False)
    return Markup(_SCRIPT_UNSAFE.sub(lambda m: _SCRIPT_ESCAPES[m.group(0)], text))  # noqa: S704 - escaped above
