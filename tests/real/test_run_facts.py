"""The analyze JSON's `copies`, `api` and `families` against an independent read of the same file.

nsys: plain sqlite3 over the export's CUPTI tables (CUPTI's enums spelled out here, not taken from the
parser). Kineto: the trace's events counted with the json module. The expert labels check the same
sections against the numbers LABELS.md gives (tests/real/test_labels.py); this checks every row.
"""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from collections import Counter, defaultdict
from typing import Any

from tests.conftest import real_path
from tests.realkit import analyze

# the export's ENUM_CUDA_MEMCPY_OPER and ENUM_CUDA_MEM_KIND (the nsys SQLite schema reference)
COPY_KIND = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH",
             10: "PtoP"}
MEMORY_KIND = {0: "pageable", 1: "pinned", 2: "device", 3: "array", 4: "managed"}
CLOVERLEAF = "pipit/perlmutter-cloverleaf-cuda.sqlite"
SAXPY = "pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
RESNET = "param/resnet_kineto.json.gz"


def _doc(rel: str) -> dict[str, Any]:
    a = analyze(real_path(rel))
    assert a.rc == 0, a.err
    return a.doc


def test_nsys_copies_equal_sqlite3() -> None:
    doc = _doc(CLOVERLEAF)
    con = sqlite3.connect(f"file:{real_path(CLOVERLEAF)}?mode=ro", uri=True)
    rows = con.execute("SELECT copyKind, srcKind, dstKind, count(*), sum(bytes), sum([end] - start) "
                       "FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1, 2, 3").fetchall()
    want = {(COPY_KIND[k], MEMORY_KIND[s], MEMORY_KIND[d], n, b, ns) for k, s, d, n, b, ns in rows}
    got = {(c["copy_kind"], c["src_kind"], c["dst_kind"], c["count"], c["bytes"], c["total_ns"])
           for c in doc["copies"] if c["op"] == "memcpy"}
    assert got == want and len(want) == 2


def test_nsys_api_calls_equal_sqlite3() -> None:
    """Runtime and driver calls per name without its ABI suffix; the export's backtrace rows (eventClass 67,
    which repeat a call with the same correlation id) are not calls."""
    doc = _doc(SAXPY)
    con = sqlite3.connect(f"file:{real_path(SAXPY)}?mode=ro", uri=True)
    calls: Counter[str] = Counter()
    total: dict[str, int] = defaultdict(int)
    for name, dur in con.execute("SELECT s.value, r.[end] - r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                                 "JOIN StringIds s ON s.id = r.nameId WHERE r.eventClass <> 67"):
        calls[re.sub(r"_v\d+$", "", name)] += 1
        total[re.sub(r"_v\d+$", "", name)] += dur
    cuda = [a for a in doc["api"]["items"] if a["api"] in ("cuda_runtime", "cuda_driver")]
    assert {a["name"]: (a["calls"], a["total_ns"]) for a in cuda} == {n: (calls[n], total[n]) for n in calls}
    assert calls["cudaMemcpy"] == 15  # 30 rows in the table: each call again as a backtrace row


def test_kineto_copies_api_and_families_equal_json_events() -> None:
    doc = _doc(RESNET)
    with gzip.open(real_path(RESNET), "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    copies = Counter(e["name"] for e in events if e.get("cat") == "gpu_memcpy")
    htod = next(c for c in doc["copies"] if c["copy_kind"] == "HtoD")
    assert (htod["src_kind"], htod["count"]) == ("pageable", copies["Memcpy HtoD (Pageable -> Device)"])
    assert htod["bytes"] == sum(e["args"]["bytes"] for e in events if e["name"] == "Memcpy HtoD (Pageable -> Device)")
    dtod = next(c for c in doc["copies"] if c["copy_kind"] == "DtoD")
    assert dtod["count"] == copies["Memcpy DtoD (Device -> Device)"]
    memsets = sum(1 for e in events if e.get("cat") == "gpu_memset")
    assert sum(c["count"] for c in doc["copies"] if c["op"] == "memset") == memsets
    launches = sum(1 for e in events if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel")
    assert next(a for a in doc["api"]["items"] if a["name"] == "cudaLaunchKernel")["calls"] == launches
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert sum(f["kernels"] for f in doc["families"]) == len(kernels) == doc["counts"]["kernels"]
    # summed durations in microseconds with fractions: the families' nanoseconds round each kernel
    assert abs(sum(f["kernel"]["ns"] for f in doc["families"]) - sum(e["dur"] for e in kernels) * 1000) <= len(kernels)
    assert abs(sum(f["kernel"]["pct"] for f in doc["families"]) - 100.0) < 0.01


def test_report_shows_the_facts_and_no_local_path(tmp_path: Any) -> None:
    """The HTML report's families/copies/API tables hold the JSON's rows; its title and capture facts name
    the file, not the absolute path it was read from (a report travels)."""
    import html
    import subprocess
    import sys

    doc = _doc(SAXPY)
    out = tmp_path / "r.html"
    subprocess.run([sys.executable, "-m", "advisor", "report", str(real_path(SAXPY)), "-o", str(out)], check=True,
                   capture_output=True)
    page = out.read_text()
    section = html.unescape(re.sub(r"<[^>]+>", " ", page[page.index('id="facts"'):page.index('id="capture"')]))
    words = " ".join(section.split())
    assert "device 0 HtoD pageable -> device 10 2.4 GiB 186.001 ms" in words
    assert "device 0 DtoH device -> pageable 5 1.2 GiB 98.698 ms" in words
    for a in doc["api"]["items"]:
        assert f"{a['name']} {a['api']} {a['calls']:,}" in words
    name = real_path(SAXPY).name
    assert re.search(r"<title>(.*?)</title>", page).group(1) == f"advisor report: {name}"  # type: ignore[union-attr]
    head = page[: page.index('<script type="application/json"')]  # the embedded document is analyze's, as given
    assert str(real_path(SAXPY).parent) not in head
