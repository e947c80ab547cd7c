#!/usr/bin/env python3
"""Run `mypy --strict` over the package as it installs (parsers/ as advisor.parsers, ...).

mypy cannot follow setuptools' package-dir mapping, so this builds a throwaway tree of symlinks
with the installed layout and checks that. Exit code is mypy's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {"parsers": "parsers", "rules": "rules", "reports": "reports"}


def build(tree: Path) -> Path:
    pkg = tree / "advisor"
    pkg.mkdir()
    for entry in (ROOT / "advisor").iterdir():
        if entry.name != "__pycache__":
            os.symlink(entry, pkg / entry.name)
    for name, src in MAPPED.items():
        os.symlink(ROOT / src, pkg / name)
    return pkg


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="advisor-mypy-") as d:
        build(Path(d))
        cmd = [sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports", "--follow-imports=silent",
               "-p", "advisor", *sys.argv[1:]]
        return subprocess.run(cmd, cwd=d).returncode


if __name__ == "__main__":
    raise SystemExit(main())
