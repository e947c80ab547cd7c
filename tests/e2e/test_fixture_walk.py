"""Every file in the shared real-trace folder either ingests or fails with one clear line, exit 2.

Runs the real CLI entry point in-process per file (a subprocess per file would cost minutes), then
checks the promises of the bad-input contract: no traceback, exactly one stderr line naming the
file, and the input byte-identical afterwards.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from advisor.cli.main import main
from tests.conftest import REAL


def _all_inputs() -> list[Path]:
    if not REAL.is_dir():
        return []
    files = [p for p in sorted(REAL.rglob("*")) if p.is_file()]
    dirs = [p for p in sorted(REAL.rglob("*")) if p.is_dir() and any(f.suffix == ".gz" for f in p.iterdir())
            and all(f.name.startswith("worker") for f in p.iterdir())]
    return files + dirs


def _sha(p: Path) -> str:
    files = sorted(f for f in p.iterdir()) if p.is_dir() else [p]
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()


INPUTS = _all_inputs()


def test_folder_is_walked(real: Path) -> None:
    assert len([p for p in INPUTS if p.is_file()]) >= 50


@pytest.mark.parametrize("path", INPUTS, ids=[str(p.relative_to(REAL)) for p in INPUTS])
def test_ingests_or_fails_cleanly(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _sha(path)
    rc = main(["analyze", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert _sha(path) == before, "input was modified"
    if rc == 0:
        doc = json.loads(out)
        assert doc["inputs"][0]["path"] == str(path)
        assert doc["schema_version"] and "counts" in doc and "time" in doc
    else:
        assert rc == 2
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith("advisor: error: ") and path.name in lines[0]
        assert json.loads(out)["ok"] is False
        assert "internal error" not in lines[0], lines[0]
