"""Writing command output: stdout, or a file written atomically (never one of the inputs)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def emit(text: str, output: str | None, inputs: list[str] | None = None) -> None:
    if not output:
        sys.stdout.write(text)
        return
    target = Path(output)
    from advisor.errors import InputError

    for i in inputs or []:
        if Path(i).exists() and target.exists() and os.path.samefile(i, target):
            raise InputError(f"{output}: refusing to overwrite an input file", "choose another -o path")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)  # mkstemp makes 0600; a report is meant to be shared
    os.replace(tmp, target)
