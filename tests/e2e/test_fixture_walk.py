"""Every file in the shared real-trace folder either ingests or fails with one clear line, exit 2.

Runs the real CLI entry point in-process per file (a subprocess per file would cost minutes), then
checks the promises of the bad-input contract: no traceback, exactly one stderr line naming the
file, and the input byte-identical afterwards. The analysis is the process-wide one of tests/realkit.py,
shared with the expert-label checks (tests/real/) and the savings property below, so each file is
analyzed once per test process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import savings
from tests.conftest import REAL
from tests.realkit import analyze


def _all_inputs() -> list[Path]:
    if not REAL.is_dir():
        return []
    files = [p for p in sorted(REAL.rglob("*")) if p.is_file()]
    dirs = [p for p in sorted(REAL.rglob("*")) if p.is_dir() and any(f.suffix == ".gz" for f in p.iterdir())
            and all(f.name.startswith("worker") for f in p.iterdir())]
    return files + dirs


INPUTS = _all_inputs()
# analyzer outputs shipped beside the traces (pipit/derived, tracelens/reference_outputs), not traces
TRACES = [p for p in INPUTS if p.suffix != ".csv"]


def rule_errors(doc: dict[str, Any]) -> list[str]:
    """Rules whose check raised instead of answering, in every run of an analysis document."""
    return [f"{r['code']}: {r.get('error')}" for run in doc.get("runs", []) for r in run.get("rules", [])
            if r.get("outcome") == "error"]


def _id(p: Path) -> str:
    return str(p.relative_to(REAL))


def test_folder_is_walked(real: Path) -> None:
    assert len([p for p in INPUTS if p.is_file()]) >= 50


@pytest.mark.parametrize("path", INPUTS, ids=[_id(p) for p in INPUTS])
def test_ingests_or_fails_cleanly(path: Path) -> None:
    a = analyze(path)
    rc, out, err = a.rc, a.out, a.err
    assert "Traceback" not in out + err
    assert a.sha_after == a.sha_before, "input was modified"
    if rc == 0:
        doc = json.loads(out)
        assert doc["inputs"][0]["path"] == str(path)
        assert doc["schema_version"] and "counts" in doc and "time" in doc
        # a rule that raised reads as "error" in its outcome: a bug, never a property of the trace
        assert not rule_errors(doc)
    else:
        assert rc == 2
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith("advisor: error: ") and path.name in lines[0]
        assert json.loads(out)["ok"] is False
        assert "internal error" not in lines[0], lines[0]


def test_savings_known_name_real_traces(real: Path) -> None:
    ids = {_id(p) for p in TRACES}
    for name, listed in savings.known().items():
        if name.startswith("fixtures/"):
            continue  # our own captures: tests/golden/test_reference_pairs.py
        assert name in ids, f"tests/savings_known.toml names {name}, which is not a real trace"
        assert listed, f"{name}: list its violations or drop the entry"


@pytest.mark.parametrize("path", TRACES, ids=[_id(p) for p in TRACES])
def test_savings_within_denominators(path: Path) -> None:
    """No finding claims more than its denominator (tests/savings.py); known violations are listed, exactly,
    in tests/savings_known.toml."""
    a = analyze(path)
    found = savings.doc_violations(a.doc) if a.rc == 0 else []
    listed = savings.known().get(_id(path), [])
    assert found == listed, (
        f"savings beyond their denominator: {found}; listed in tests/savings_known.toml: {listed}"
        " (fix the saving, or update the list when one is fixed)"
    )


def _sum(shares: list[dict[str, Any]], pick: Callable[[str], bool]) -> int:
    return sum(int(s["ns"]) for s in shares if pick(str(s["name"])))


@pytest.mark.parametrize("path", TRACES, ids=[_id(p) for p in TRACES])
def test_time_section_and_verdict_partition_the_span_alike(path: Path) -> None:
    """The `time` section and the verdict read the same device timeline: where the verdict's denominator is the
    device span, its shares add up to the span, its idle shares to the time section's idle and its comm and
    comm_wait shares to the exposed communication (one definition of a communication kernel: kernel_names);
    where it is the marked steps, they cover the steps' time whole (GPU idle in a step before the device's first
    activity or after its last included) and their GPU work stays within the time section's figures."""
    a = analyze(path)
    if a.rc != 0 or not a.doc.get("verdict"):
        return
    time = {int(t["device_id"]): t for t in a.doc["time"]}
    for t in time.values():
        assert t["busy"]["ns"] + t["idle"]["ns"] == t["span_ns"]
    for dv in a.doc["verdict"].get("devices", []):
        shares, t = dv["verdict"]["shares"], time[int(dv["device_id"])]
        if not shares:
            continue
        idle, comm = _sum(shares, lambda n: n.startswith("idle")), _sum(shares, lambda n: n in ("comm", "comm_wait"))
        if "device span" in shares[0]["of"]:
            assert (_sum(shares, lambda n: True), idle, comm) == (
                t["span_ns"], t["idle"]["ns"], t["communication_exposed"]["ns"]), dv["device_id"]
        else:  # the marked steps, which may begin before the device's first activity or end after its last: the
            # shares cover their time whole, GPU work no more than the time section's busy time
            busy = _sum(shares, lambda n: not n.startswith("idle"))
            assert busy <= t["busy"]["ns"] and comm <= t["communication_exposed"]["ns"], dv["device_id"]
            assert sum(s["pct"] for s in shares) == pytest.approx(100.0, abs=0.05 * len(shares) + 0.05), dv["device_id"]
    top = a.doc["verdict"]["shares"]
    if top and "sum of device spans" in top[0]["of"]:
        assert _sum(top, lambda n: True) == sum(t["span_ns"] for t in time.values())
