"""Corrupted Kineto times never change the answer in silence: the event is cleaned and counted in the notes.

One `"ts": 9223372036854775807` in the first MiB once switched the whole trace to nanoseconds (span
4.871 ms -> 4.9 us, the top finding gone); a duration of centuries stretched the span to decades.
The planted traces here are a real fixture plus one such event; the clean trace is the reference.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.parsers.kineto.decode import sniff
from tests.reliability.hostile import run, sha256, source

INT64_MAX = 9223372036854775807


def _events(doc: dict[str, Any], cat: str) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == cat]


def _planted(tmp_path: Path, change: str) -> tuple[Path, Path]:
    """(clean copy, copy with one corrupted event) of the Kineto fixture, as plain JSON."""
    doc = json.loads(gzip.decompress(source("kineto").read_bytes()))
    clean = tmp_path / "clean" / "trace.json"
    clean.parent.mkdir()
    clean.write_text(json.dumps(doc))
    kernel = copy.deepcopy(_events(doc, "kernel")[10])
    if change == "ts":
        kernel["ts"] = INT64_MAX
        doc["traceEvents"].insert(5, kernel)  # well inside the first MiB, where the unit is decided
    elif change == "dur":
        kernel["dur"] = 1e15  # 31 years in us
        doc["traceEvents"].append(kernel)
    else:
        kernel["dur"] = -5.0
        doc["traceEvents"].append(kernel)
    bad = tmp_path / "bad" / "trace.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps(doc))
    return clean, bad


def _analyze(trace: Path, cache: Path) -> dict[str, Any]:
    before = sha256(trace)
    done = run(["analyze", str(trace), "--format", "json"], cache)
    assert done.code == 0, done.err
    assert sha256(trace) == before
    return dict(json.loads(done.out))


@pytest.mark.parametrize(("change", "note"), [("ts", "cleaned_no_ts"), ("dur", "cleaned_impossible_dur"),
                                              ("negative", "cleaned_negative_dur")])
def test_one_corrupted_event_leaves_the_answer_unchanged(change: str, note: str, tmp_path: Path) -> None:
    clean, bad = _planted(tmp_path, change)
    ref = _analyze(clean, tmp_path / "cache")
    got = _analyze(bad, tmp_path / "cache")
    assert ref["capture"]["span_ns"] == 32_387_271  # 32.387 ms, read from the JSON by hand
    assert got["capture"] == ref["capture"]
    assert got["headline"] == ref["headline"]
    assert [f["code"] for f in got["findings"]] == [f["code"] for f in ref["findings"]]
    notes = got["runs"][0]["input"]["notes"]
    assert notes[note] == 1
    assert notes["time_unit"] == ["us"]
    assert note not in ref["runs"][0]["input"]["notes"]


def test_the_unit_is_the_median_timestamps() -> None:
    us = b", ".join(b'{"ts": %d.5}' % (1_700_000_000_000_000 + i) for i in range(99))
    assert sniff(us + b', {"ts": 9223372036854775807}') == ("exact", False)
    ns = b", ".join(b'{"ts": %d}' % (1_700_000_000_000_000_000 + i) for i in range(99))
    assert sniff(ns + b', {"ts": 12}') == ("float", True)
    assert sniff(b'{"ts": 1.5}, {"ts": 9223372036854775807.5}') == ("float", False)
