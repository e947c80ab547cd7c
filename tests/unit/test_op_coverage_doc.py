"""docs/op-coverage.md is what scripts/gen_op_coverage.py renders from the real traces today."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.real, pytest.mark.slow]


def test_op_coverage_doc_is_current(real: object) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_op_coverage.py"), "--check"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr or "docs/op-coverage.md is stale: run python scripts/gen_op_coverage.py"
