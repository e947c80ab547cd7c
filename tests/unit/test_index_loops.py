"""index_loops: Python loops over one dimension of a tensor (aten::select at index 0, 1, ..., aten::slice in pieces,
or Python's iteration over the tensor through one aten::unbind), checked against an independent read of the same
Kineto JSON (gzip + json: the selects' recorded index, the launch calls' start inside each loop); a synthetic trace
for the slice and unbind forms and the look-alikes that are not loops (a constant index, the selects aten::unbind
makes, an unbind whose pieces are used unevenly); LA001 puts batching the loop first where it launched most
kernels."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from advisor import metrics
from advisor.ingest import open_run
from tests import realkit
from tests.conftest import ROOT

LA006 = ROOT / "fixtures/kineto/LA006_unbatched_gemm_launches_baseline/LA006_unbatched_gemm_launches_baseline.json.gz"
SHORT_NS = 10_000  # LA001's short_kernel_us


def _ns(us: float) -> int:
    return round(us * 1000)


def _json_loops(events: list[dict[str, Any]], dims: list[int]) -> tuple[int, int]:
    """Loops over dimension 0 of the tensor of `dims` and the kernels whose launch call starts inside one: each loop
    from its first index-0 select to its first select of the last index plus one mean iteration."""
    sel = sorted((_ns(e["ts"]), int(e["args"]["Concrete Inputs"][2])) for e in events
                 if e.get("name") == "aten::select" and e["args"].get("Input Dims", [None])[0] == dims
                 and e["args"]["Concrete Inputs"][1] == "0")
    loops, cur, last = [], None, None
    for ts, idx in sel:
        if cur is None or (last is not None and idx < last):
            cur = {"start": ts, "first": {}}
            loops.append(cur)
        cur["first"].setdefault(idx, ts)
        last = idx
    n = dims[0]
    spans = [(lp["start"], lp["first"][n - 1] + (lp["first"][n - 1] - lp["start"]) // (n - 1)) for lp in loops]
    calls = {e["args"]["correlation"]: _ns(e["ts"]) for e in events
             if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    kernels = [calls[e["args"]["correlation"]] for e in events
               if e.get("cat") == "kernel" and e["args"]["correlation"] in calls]
    return len(loops), sum(1 for t in kernels for s, e in spans if s <= t < e)


def test_loop_over_gemm_batch_matches_the_json(tmp_path: Path) -> None:
    with gzip.open(LA006, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    loops, kernels = _json_loops(events, [256, 512, 512])
    run = open_run(LA006, cache_dir=tmp_path)
    try:
        rows = metrics.query(run, "index_loops", short_ns=SHORT_NS)
    finally:
        run.close()
    by_shape = {r["shape"]: r for r in rows}
    row = by_shape["[256, 512, 512]"]
    assert (row["dim"], row["width"], row["iterations"]) == (0, 1, 256)
    assert (row["loops"], row["kernels"]) == (loops, kernels) == (3, 1534)
    # the loop indexes both operands, A[i] @ B[i]: the same loops under the other shape
    assert by_shape["[256, 64, 512]"]["loops"] == 3
    top = realkit.analyze(LA006.parent).doc["findings"][0]
    assert top["code"] == "LA001"
    assert top["fixes"][0]["title"] == (
        "batch the Python loop over dimension 0 of the [256, 512, 512] tensor into one op")
    ev = {e["name"]: e["value"] for e in top["evidence"]}
    assert (ev["loop_kernels"], ev["loops"], ev["loop_iterations"]) == (kernels, 3, 256)
    assert ev["loop_kernels"] * 2 >= ev["short_kernels"]


def _op(name: str, ts: float, dur: float, dims: list[Any], concrete: list[str], ext: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {"External id": ext, "Input Dims": dims, "Concrete Inputs": concrete}}


def _launch(ts: float, corr: int, dur_us: float) -> list[dict[str, Any]]:
    return [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 2,
             "args": {"correlation": corr}},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts + 5, "dur": dur_us,
             "args": {"correlation": corr, "device": 0, "stream": 7}}]


def _synthetic(path: Path) -> None:
    """Slices x[:, 4i:4i+4] of a [2, 16] tensor, i = 0..3, twice, one kernel per piece; then x[:, 0] five times and
    an unbind of a [6, 3] tensor (its six selects inside it), each followed by a kernel: not loops; then a Python
    iteration over the 5 rows of a [5, 8] tensor (a loop), and an unbind whose pieces are used unevenly (not one)."""
    ev: list[dict[str, Any]] = []
    t, corr = 0.0, 1
    for _ in range(2):
        for i in range(4):
            ev.append(_op("aten::slice", t, 1, [[2, 16], [], [], [], []], ["", "1", str(4 * i), str(4 * i + 4), "1"],
                          corr))
            ev += _launch(t + 2, corr, 3)
            t, corr = t + 20, corr + 1
    # x[:, -1:] (an open end written as 2^63 - 1) and x[:, 2:] (from 2 to the end): no loop, and no overflow
    ev.append(_op("aten::slice", t, 1, [[2, 16], [], [], [], []], ["", "1", "-1", str(2**63 - 1), "1"], corr))
    ev.append(_op("aten::slice", t + 2, 1, [[2, 16], [], [], [], []], ["", "1", "2", str(2**63 - 1), "1"], corr))
    t += 20
    for _ in range(5):
        ev.append(_op("aten::select", t, 1, [[2, 16], [], []], ["", "1", "0"], corr))
        ev += _launch(t + 2, corr, 3)
        t, corr = t + 20, corr + 1
    ev.append(_op("aten::unbind", t, 12, [[6, 3], []], ["", "0"], corr))
    ev += [_op("aten::select", t + 1 + i, 1, [[6, 3], [], []], ["", "0", str(i)], corr) for i in range(6)]
    ev += _launch(t + 14, corr + 1, 3)
    t, corr = t + 40, corr + 2
    # `for row in y` over a [5, 8] tensor: one unbind, then each row unsqueezed and run (a kernel each)
    ev.append(_op("aten::unbind", t, 3, [[5, 8], []], ["", "0"], corr))
    t, corr = t + 5, corr + 1
    for _ in range(5):
        ev.append(_op("aten::unsqueeze", t, 1, [[8], []], ["", "0"], corr))
        ev += _launch(t + 2, corr, 3)
        t, corr = t + 20, corr + 1
    # an unbind of a [4, 2] tensor whose pieces are used 5 times: not as many for each piece, not a loop
    ev.append(_op("aten::unbind", t, 3, [[4, 2], []], ["", "0"], corr))
    t, corr = t + 5, corr + 1
    for _ in range(5):
        ev.append(_op("aten::neg", t, 1, [[2]], [""], corr))
        ev += _launch(t + 2, corr, 3)
        t, corr = t + 20, corr + 1
    with path.open("w") as f:
        json.dump({"schemaVersion": 1, "traceEvents": ev}, f)


def test_slice_loops_and_look_alikes(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    _synthetic(trace)
    run = open_run(trace, cache_dir=tmp_path / "c")
    try:
        rows = metrics.query(run, "index_loops", short_ns=SHORT_NS)
    finally:
        run.close()
    got = defaultdict(list)
    for r in rows:
        got[r["shape"]].append((r["dim"], r["width"], r["iterations"], r["loops"], r["kernels"], r["short_kernels"]))
    # the second loop's last piece ends one mean iteration after its start: its kernel is inside
    assert dict(got) == {"[2, 16]": [(1, 4, 4, 2, 8, 8)], "[5, 8]": [(0, 0, 5, 1, 5, 5)]}
