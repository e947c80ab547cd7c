"""device_turns and CO004 on our capture of 24 GPT blocks split over two H200s in one process (device_map='auto'
style, fixtures/kineto/probe_device_map_two_gpu_infer): the peer copies, each device's busy time and the time both
were busy, re-read from the trace JSON (gzip + json: the union of each device's kernels, copies and memsets); the
idle each device spends while the other works is claimed as 'peer', scored as communication, and priced by CO004."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from advisor import metrics
from advisor.ingest import open_run
from tests import realkit
from tests.conftest import ROOT

TRACE = ROOT / "fixtures/kineto/probe_device_map_two_gpu_infer/probe_device_map_two_gpu_infer.json.gz"


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    return sum(max(0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)


def _device_busy(events: list[dict[str, Any]]) -> dict[int, list[tuple[int, int]]]:
    busy: dict[int, list[tuple[int, int]]] = {}
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("dur", 0) > 0:
            ts = round(e["ts"] * 1000)
            dev = e["args"].get("device", e["args"].get("inDevice"))  # a peer copy names the device it ran on
            busy.setdefault(int(dev), []).append((ts, ts + round(e["dur"] * 1000)))
    return {d: _union(s) for d, s in busy.items()}


def test_devices_taking_turns_match_the_json(tmp_path: Path) -> None:
    with gzip.open(TRACE, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    peer = [e for e in events if e.get("cat") == "gpu_memcpy" and "PtoP" in e["name"]]
    busy = _device_busy(events)
    run = open_run(TRACE, cache_dir=tmp_path)
    try:
        rows = {int(r["device_id"]): r for r in metrics.query(run, "device_turns")}
    finally:
        run.close()
    assert sorted(rows) == sorted(busy) == [0, 1]
    assert rows[0]["copies"] == len(peer) == 3
    assert rows[0]["copy_bytes"] == sum(int(e["args"]["bytes"]) for e in peer) == 100_663_296
    for d in (0, 1):  # busy time within 1 us per interval of the JSON's union (the model rounds to ns)
        assert rows[d]["busy_ns"] == pytest.approx(sum(e - s for s, e in busy[d]), abs=len(busy[d]) * 1000)
    assert rows[0]["overlap_ns"] == pytest.approx(_overlap(busy[0], busy[1]), abs=10_000)
    assert rows[0]["overlap_ns"] < 0.01 * min(rows[0]["busy_ns"], rows[1]["busy_ns"])


def test_the_verdict_and_the_first_fix_say_the_devices_wait_on_each_other() -> None:
    doc = realkit.analyze(TRACE).doc
    assert doc["verdict"]["class"] == "communication"
    assert "the devices wait on each other" in doc["verdict"]["cause"]
    shares = {s["name"]: s["pct"] for s in doc["verdict"]["shares"]}
    assert shares["idle_peer"] >= 45.0 and shares.get("idle_host", 0.0) < 5.0
    top = doc["findings"][0]
    ev = {e["name"]: e["value"] for e in top["evidence"]}
    assert top["code"] == "CO004"
    assert top["fixes"][0]["title"] == "keep every device busy: pipeline the work across them"
    # the saving is the smaller device's idle while the other worked: at most the other's busy time
    with gzip.open(TRACE, "rt", encoding="utf-8") as f:
        busy = _device_busy(json.load(f)["traceEvents"])
    assert 0 < top["est_gain_ns"] == min(ev["least_peer_idle"], ev["busy_beyond_busiest"])
    assert top["est_gain_ns"] <= min(sum(e - s for s, e in u) for u in busy.values())
    idle = next(f for f in doc["findings"] if f["code"] == "ID001")
    assert "priced by CO004" in idle["message"]
    assert idle["fixes"][0]["title"] == "pipeline the work across the devices (see CO004)"
