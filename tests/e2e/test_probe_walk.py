"""Every capture of our own realistic probes (fixtures/kineto/probe_*) analyzes with no rule raising: the real-trace
walk (test_fixture_walk.py) covers the shared traces, and a rule's failure on a pattern only our probes hold (a slice
with an open end, 2^63 - 1, in a decode loop) read as "error" in its outcome and took its finding out of the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.test_fixture_walk import rule_errors
from tests.realkit import analyze

PROBES = sorted(p for p in (ROOT / "fixtures" / "kineto").glob("probe_*") if p.is_dir())


def test_probes_are_walked() -> None:
    assert len(PROBES) >= 50


@pytest.mark.parametrize("path", PROBES, ids=[p.name for p in PROBES])
def test_no_rule_raises(path: Path) -> None:
    a = analyze(path)
    assert a.rc == 0, a.err
    assert not rule_errors(a.doc)
