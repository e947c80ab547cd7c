"""Broken-input corpus: build deterministic mutations of the real fixtures and check advisor on each.

    python scripts/mutate_corpus.py run [--budget long|short] [--jobs 2] [--doc docs/reliability.md]
    python scripts/mutate_corpus.py build OUT [--budget short]      # only write the cases under OUT
    python scripts/mutate_corpus.py list [--budget short]

Every case is a file (or directory) made from one of the real traces under the shared fixture folder
(or from nothing: zero-byte files, garbage) by a seeded mutation. The contract each case must meet
(issue 9): `advisor analyze CASE --format json` ends with a result (exit 0, a JSON document), or with
exit 2 and exactly one stderr line `advisor: error: ...` naming the file and saying what to do; never
a traceback or an "internal error", never longer than CASE_TIMEOUT_S, never a child peak RSS above
RSS_LIMIT_BYTES, and the input byte-identical afterwards.

`run` executes each case in its own child process (forked from a parent that has imported advisor
once, so a case costs its parse and not the interpreter start; `--exec` spawns a fresh interpreter
instead), kills it at the timeout, reads its peak RSS from os.wait4, and writes docs/reliability.md.
tests/reliability/test_corpus.py runs the `short` budget in-process under pytest.

Nothing is written next to the fixtures: cases are made in a temporary directory (or OUT).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REAL = Path(os.environ.get("ADVISOR_REAL_FIXTURES", ROOT.parent / "shared" / "fixtures" / "real"))
SEED = 9
CASE_TIMEOUT_S = 30.0
RSS_LIMIT_BYTES = 3 << 30  # documented in docs/limits.md: peak RSS of one `advisor analyze` on any case
DOC = ROOT / "docs" / "reliability.md"

# Seeds: small real traces of every format (short budget) and a few larger ones (long budget).
KINETO = "hta/critical_path__cuda_event_sync__event_sync_trace.json.gz"
KINETO_GPU = "hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz"
KINETO_LONG = [
    "kineto/resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz",
    "hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
]
RANK = "param/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz"
SQLITE = "nsys-ai/mock_rtx3080_wsl2.sqlite"
SQLITE_NVTX = "pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
NCU_REP = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"
NSYS_REP = "nsys-rep/alpa_rtx3090_nsys2022.1.3.nsys-rep"
NON_NCU_CSV = "pipit/derived/cloverleaf_gpu_trace.csv"

Make = Callable[[Path], Path]


@dataclass(frozen=True)
class Case:
    """One broken input: `make(dir)` writes it under an empty `dir` and returns the path to analyze."""

    category: str
    name: str
    make: Make = field(compare=False, repr=False)
    long_only: bool = False


# ------------------------------------------------------------------------------------------------
# Helpers that read seeds and write cases
# ------------------------------------------------------------------------------------------------


def real(rel: str) -> Path:
    p = REAL / rel
    if not p.exists():
        raise FileNotFoundError(f"real fixture {rel} not found under {REAL} (set ADVISOR_REAL_FIXTURES)")
    return p


def raw_bytes(rel: str) -> bytes:
    return real(rel).read_bytes()


def json_bytes(rel: str) -> bytes:
    """The decompressed JSON text of a Kineto seed."""
    data = raw_bytes(rel)
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def kineto_doc(rel: str = KINETO_GPU) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json_bytes(rel))
    return doc


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def rng_for(name: str) -> random.Random:
    return random.Random(f"{SEED}:{name}")


def write(name: str, data: bytes) -> Make:
    def make(d: Path) -> Path:
        p = d / name
        p.write_bytes(data)
        return p

    return make


def lazy_write(name: str, data: Callable[..., bytes]) -> Make:
    def make(d: Path) -> Path:
        p = d / name
        p.write_bytes(data())
        return p

    return make


def flip_bits(data: bytes, n: int, rng: random.Random, start: int = 0) -> bytes:
    buf = bytearray(data)
    for _ in range(n):
        i = rng.randrange(start, len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    return bytes(buf)


def sqlite_copy(rel: str, sql: list[str]) -> Make:
    """A copy of a real nsys SQLite export with `sql` applied (tables dropped, columns retyped...)."""
    name = Path(rel).name

    def make(d: Path) -> Path:
        p = d / name
        shutil.copyfile(real(rel), p)
        con = sqlite3.connect(p)
        try:
            for stmt in sql:
                con.execute(stmt)
            con.commit()
        finally:
            con.close()
        return p

    return make


def rebuild_table_sql(con_path: Path, table: str, select: Callable[[list[str]], str]) -> list[str]:
    """Statements that rebuild `table` without constraints from `SELECT {select(columns)}`."""
    con = sqlite3.connect(f"file:{con_path}?mode=ro", uri=True)
    try:
        cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
    finally:
        con.close()
    return [
        f'CREATE TABLE "_new" AS SELECT {select(cols)} FROM "{table}"',
        f'DROP TABLE "{table}"',
        f'ALTER TABLE "_new" RENAME TO "{table}"',
    ]


def sqlite_rebuilt(rel: str, table: str, select: Callable[[list[str]], str], after: list[str] | None = None) -> Make:
    """Copy `rel`, rebuild `table` (constraints gone) from a projection, then run `after`."""
    name = Path(rel).name

    def make(d: Path) -> Path:
        p = d / name
        shutil.copyfile(real(rel), p)
        stmts = rebuild_table_sql(p, table, select) + (after or [])
        con = sqlite3.connect(p)
        try:
            for stmt in stmts:
                con.execute(stmt)
            con.commit()
        finally:
            con.close()
        return p

    return make


# ------------------------------------------------------------------------------------------------
# Categories
# ------------------------------------------------------------------------------------------------


def truncated(long: bool) -> Iterator[Case]:
    fractions = [0.001, 0.1, 0.5, 0.9, 0.999] if long else [0.1, 0.5, 0.99]
    seeds = [(SQLITE, "sqlite"), (KINETO_GPU, "kineto-json")]
    if long:
        seeds += [(SQLITE_NVTX, "sqlite"), (KINETO_LONG[0], "kineto-json")]
    for rel, kind in seeds:
        stem = Path(rel).name
        for f in fractions:
            name = f"{kind}-{f:g}-{stem}"
            if kind == "kineto-json":  # the JSON cut short inside a valid gzip
                yield Case("truncated", name, lazy_write(stem, lambda r=rel, f=f: gz(_cut(json_bytes(r), f))))
            else:
                yield Case("truncated", name, lazy_write(stem, lambda r=rel, f=f: _cut(raw_bytes(r), f)))
    for n in ([1, 15, 100, 4095, 4097] if long else [15, 4097]):
        yield Case("truncated", f"sqlite-{n}B", lazy_write("trace.sqlite", lambda n=n: raw_bytes(SQLITE)[:n]))
    yield Case("truncated", "json-plain-half", lazy_write("trace.json", lambda: _cut(json_bytes(KINETO), 0.5)))


def _cut(data: bytes, fraction: float) -> bytes:
    return data[: max(1, int(len(data) * fraction))]


def bitflips(long: bool) -> Iterator[Case]:
    counts = [1, 8, 64, 512] if long else [1, 64]
    reps = 3 if long else 1
    for n in counts:
        for r in range(reps):
            tag = f"{n}bits-{r}"
            rng_name = f"flip-sqlite-{tag}"
            yield Case("bit-flips", f"sqlite-{tag}", lazy_write(
                "trace.sqlite", lambda n=n, k=rng_name: flip_bits(raw_bytes(SQLITE), n, rng_for(k), start=100)))
            k2 = f"flip-json-{tag}"
            yield Case("bit-flips", f"kineto-json-{tag}", lazy_write(
                "trace.json.gz", lambda n=n, k=k2: gz(flip_bits(json_bytes(KINETO_GPU), n, rng_for(k)))))
            k3 = f"flip-gz-{tag}"
            yield Case("bit-flips", f"kineto-gzip-{tag}", lazy_write(
                "trace.json.gz", lambda n=n, k=k3: flip_bits(raw_bytes(KINETO_GPU), n, rng_for(k), start=10)))
            if long:
                k4 = f"flip-ncu-{tag}"
                yield Case("bit-flips", f"ncu-rep-{tag}", lazy_write(
                    "trace.ncu-rep", lambda n=n, k=k4: flip_bits(raw_bytes(NCU_REP), n, rng_for(k))), long_only=True)


def gzip_cases(long: bool) -> Iterator[Case]:
    for f in ([0.01, 0.3, 0.6, 0.95, 0.999] if long else [0.3, 0.95]):
        yield Case("gzip", f"kineto-cut-{f:g}", lazy_write("trace.json.gz", lambda f=f: _cut(raw_bytes(KINETO_GPU), f)))
        yield Case("gzip", f"sqlite-gz-cut-{f:g}",
                   lazy_write("trace.sqlite.gz", lambda f=f: _cut(gz(raw_bytes(SQLITE)), f)))
    yield Case("gzip", "gzip-of-garbage", lazy_write("trace.json.gz", lambda: gz(rng_for("gzg").randbytes(50_000))))
    yield Case("gzip", "gzip-magic-then-garbage",
               lazy_write("trace.json.gz", lambda: b"\x1f\x8b" + rng_for("gzm").randbytes(5_000)))
    yield Case("gzip", "gzip-empty-member", lazy_write("trace.json.gz", lambda: gz(b"")))
    yield Case("gzip", "gzip-bad-crc", lazy_write("trace.json.gz", lambda: _bad_crc(raw_bytes(KINETO))))
    yield Case("gzip", "gzip-trailing-junk", lazy_write("trace.json.gz", lambda: raw_bytes(KINETO) + b"junk" * 10))
    yield Case("gzip", "gzip-two-members", lazy_write("trace.json.gz", lambda: raw_bytes(KINETO) * 2))
    yield Case("gzip", "gzip-sqlite-header-then-zeros",
               lazy_write("trace.sqlite.gz", lambda: gz(b"SQLite format 3\x00" + bytes(1 << 20))))
    if long:
        yield Case("gzip", "gzip-of-garbage-sqlite-name",
                   lazy_write("trace.sqlite.gz", lambda: gz(rng_for("gzs").randbytes(50_000))), long_only=True)
        yield Case("gzip", "double-gzip", lazy_write("trace.json.gz", lambda: gz(raw_bytes(KINETO))), long_only=True)


def _bad_crc(data: bytes) -> bytes:
    buf = bytearray(data)
    buf[-8] ^= 0xFF
    return bytes(buf)


def json_shape(long: bool) -> Iterator[Case]:
    tops: dict[str, bytes] = {
        "list": b"[]",
        "list-of-events": b'[{"ph": "X", "name": "k", "ts": 1, "dur": 2}]',
        "number": b"5",
        "string": b'"traceEvents"',
        "null": b"null",
        "object-empty": b"{}",
        "traceEvents-5": b'{"traceEvents": 5}',
        "traceEvents-string": b'{"traceEvents": "x"}',
        "traceEvents-null": b'{"traceEvents": null}',
        "traceEvents-object": b'{"traceEvents": {"a": 1}}',
        "traceEvents-empty": b'{"traceEvents": []}',
        "events-strings": b'{"traceEvents": ["a", "b"]}',
        "events-nulls": b'{"traceEvents": [null, null]}',
        "events-nested-arrays": b'{"traceEvents": [[[]], [1, [2]]]}',
        "events-numbers": b'{"traceEvents": [1, 2.5, -3]}',
        "bom-prefixed": b"\xef\xbb\xbf" + b'{"traceEvents": []}',
        "utf16": '{"traceEvents": []}'.encode("utf-16"),
        "trailing-garbage": b'{"traceEvents": []} trailing',
        "nan-literal": b'{"traceEvents": [{"ph": "X", "name": "k", "ts": NaN, "dur": NaN}]}',
        "duplicate-keys": b'{"traceEvents": [], "traceEvents": 5}',
        "lone-surrogate": b'{"traceEvents": [{"ph": "X", "name": "\\ud800", "ts": 1, "dur": 1, "pid": 0, "tid": 0}]}',
        "invalid-utf8": b'{"traceEvents": [{"ph": "X", "name": "\xff\xfe", "ts": 1, "dur": 1, "pid": 0, "tid": 0}]}',
    }
    for key, data in tops.items():
        yield Case("json-shape", f"top-{key}", write("trace.json", data))
    for key, fn in EVENT_MUTATIONS.items():
        yield Case("json-shape", f"events-{key}", lazy_write("trace.json.gz", lambda fn=fn, key=key: _mutated(fn, key)))
    for key, meta_fn in META_MUTATIONS.items():
        yield Case("json-shape", f"meta-{key}", lazy_write("trace.json.gz", lambda m=meta_fn: _meta_mutated(m)))
    if long:
        for rel in KINETO_LONG:
            for key in ("dur-negative", "ts-strings", "missing-ts", "mixed-junk"):
                fn = EVENT_MUTATIONS[key]
                yield Case("json-shape", f"{Path(rel).name}-{key}",
                           lazy_write("trace.json.gz", lambda fn=fn, key=key, rel=rel: _mutated(fn, key, rel)),
                           long_only=True)


def _mutated(fn: Callable[[dict[str, Any], random.Random], Any], key: str, rel: str = KINETO_GPU) -> bytes:
    doc = kineto_doc(rel)
    rng = rng_for(f"ev-{key}-{rel}")
    out = []
    for ev in doc["traceEvents"]:
        if rng.random() < 0.3:
            ev = fn(dict(ev), rng)
        out.append(ev)
    doc["traceEvents"] = out
    return gz(json.dumps(doc, allow_nan=True).encode())


def _meta_mutated(fn: Callable[[dict[str, Any]], None]) -> bytes:
    doc = kineto_doc()
    fn(doc)
    return gz(json.dumps(doc, allow_nan=True).encode())


def _drop(key: str) -> Callable[[dict[str, Any], random.Random], Any]:
    def f(ev: dict[str, Any], rng: random.Random) -> Any:
        ev.pop(key, None)
        return ev

    return f


Mutation = Callable[[dict[str, Any], random.Random], Any]


def _set(key: str, value: Mutation) -> Mutation:
    def f(ev: dict[str, Any], rng: random.Random) -> Any:
        ev[key] = value(ev, rng)
        return ev

    return f


def _junk(ev: dict[str, Any], rng: random.Random) -> Any:
    return rng.choice(["event", None, [ev], [[[]]], 7, {"ph": None}, {}, {"args": ev}])


EVENT_MUTATIONS: dict[str, Callable[[dict[str, Any], random.Random], Any]] = {
    "missing-ph": _drop("ph"),
    "missing-ts": _drop("ts"),
    "missing-dur": _drop("dur"),
    "missing-name": _drop("name"),
    "missing-pid-tid": lambda ev, rng: {k: v for k, v in ev.items() if k not in ("pid", "tid")},
    "dur-negative": _set("dur", lambda ev, rng: -rng.randint(1, 10**6)),
    "dur-nan": _set("dur", lambda ev, rng: float("nan")),
    "dur-inf": _set("dur", lambda ev, rng: float("inf")),
    "dur-huge-float": _set("dur", lambda ev, rng: 1e300),
    "dur-huge-int": _set("dur", lambda ev, rng: 2**70),
    "dur-string": _set("dur", lambda ev, rng: str(ev.get("dur", "12"))),
    "ts-strings": _set("ts", lambda ev, rng: str(ev.get("ts", "1"))),
    "ts-null": _set("ts", lambda ev, rng: None),
    "ts-negative": _set("ts", lambda ev, rng: -abs(ev.get("ts", 1) or 1)),
    "ts-huge": _set("ts", lambda ev, rng: 1e30),
    "ts-bool": _set("ts", lambda ev, rng: True),
    "ph-unknown": _set("ph", lambda ev, rng: rng.choice(["Z", "", "XX", 5, None])),
    "name-not-string": _set("name", lambda ev, rng: rng.choice([5, None, {"a": 1}, ["x"], 1.5])),
    "pid-tid-objects": lambda ev, rng: dict(ev, pid={"a": 1}, tid=[1]),
    "pid-strings": lambda ev, rng: dict(ev, pid="rank 0", tid="stream 7 junk"),
    "args-not-object": _set("args", lambda ev, rng: rng.choice([5, "x", [1, 2], None])),
    "args-odd-values": _set("args", lambda ev, rng: {"device": "zero", "stream": [1], "correlation": {"a": 1},
                                                       "External id": 1.5e300, "grid": "1,1,1", "block": [None]}),
    "cat-odd": _set("cat", lambda ev, rng: rng.choice([5, None, "kernel", "gpu_memcpy", "ac2g"])),
    "mixed-junk": _junk,
}


def _set_meta(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def f(doc: dict[str, Any]) -> None:
        doc[key] = value

    return f


META_MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "deviceProperties-5": _set_meta("deviceProperties", 5),
    "deviceProperties-junk": _set_meta("deviceProperties", [None, "x", {"id": "zero", "name": 5}, [1]]),
    "distributedInfo-string": _set_meta("distributedInfo", "rank zero"),
    "distributedInfo-odd": _set_meta("distributedInfo", {"rank": "x", "world_size": -1, "backend": 5}),
    "displayTimeUnit-odd": _set_meta("displayTimeUnit", 5),
    "baseTimeNanoseconds-string": _set_meta("baseTimeNanoseconds", "soon"),
    "schemaVersion-object": _set_meta("schemaVersion", {"v": 1}),
}


def sqlite_schema(long: bool) -> Iterator[Case]:
    drops = ["CUPTI_ACTIVITY_KIND_KERNEL", "StringIds", "CUPTI_ACTIVITY_KIND_RUNTIME", "TARGET_INFO_GPU"]
    if long:
        drops += ["META_DATA_EXPORT", "CUPTI_ACTIVITY_KIND_MEMCPY", "ENUM_CUDA_MEMCPY_OPER", "TARGET_INFO_CUDA_DEVICE",
                  "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "ThreadNames"]
    for t in drops:
        yield Case("sqlite-schema", f"drop-table-{t}", sqlite_copy(SQLITE, [f'DROP TABLE "{t}"']))
    yield Case("sqlite-schema", "drop-table-NVTX_EVENTS", sqlite_copy(SQLITE_NVTX, ['DROP TABLE "NVTX_EVENTS"']))
    yield Case("sqlite-schema", "drop-all-tables", sqlite_copy(SQLITE, _drop_all(SQLITE)))
    dropped_cols = [("CUPTI_ACTIVITY_KIND_KERNEL", c) for c in ("start", "end", "shortName", "deviceId")]
    if long:
        dropped_cols += [("CUPTI_ACTIVITY_KIND_KERNEL", c) for c in ("demangledName", "streamId", "correlationId",
                                                                     "gridX")]
        dropped_cols += [("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId"), ("StringIds", "value"), ("StringIds", "id"),
                         ("TARGET_INFO_GPU", "name")]
    for table, col in dropped_cols:
        yield Case("sqlite-schema", f"drop-column-{table}.{col}",
                   sqlite_rebuilt(SQLITE, table, _without(col)))
    nv_cols = ["text", "start"] + (["eventType", "end", "textId"] if long else [])
    for col in nv_cols:
        yield Case("sqlite-schema", f"drop-column-NVTX_EVENTS.{col}",
                   sqlite_rebuilt(SQLITE_NVTX, "NVTX_EVENTS", _without(col)))
    k = "CUPTI_ACTIVITY_KIND_KERNEL"
    star: Callable[[list[str]], str] = lambda cols: "*"  # noqa: E731
    retyped = {
        "text-in-start-end": [f"UPDATE {k} SET start = 'abc', \"end\" = 'later'"],
        "text-in-some-starts": [f"UPDATE {k} SET start = 'x' || start WHERE rowid % 2 = 0"],
        "float-text-in-start": [f"UPDATE {k} SET start = '12.5'"],
        "blob-in-start": [f"UPDATE {k} SET start = x'00ff'"],
        "null-start-end": [f'UPDATE {k} SET start = NULL, "end" = NULL'],
        "end-before-start": [f'UPDATE {k} SET "end" = start - 1000'],
        "huge-times": [f'UPDATE {k} SET start = 9223372036854775000, "end" = 9223372036854775807'],
        "negative-times": [f'UPDATE {k} SET start = -5, "end" = -1'],
        "name-id-dangling": [f"UPDATE {k} SET shortName = 999999, demangledName = 999998"],
        "name-id-text": [f"UPDATE {k} SET shortName = 'kernel', demangledName = 'kernel'"],
        "device-text": [f"UPDATE {k} SET deviceId = 'gpu0', streamId = 'default'"],
        "empty-kernels": [f"DELETE FROM {k}"],
        "strings-null-blob": ["UPDATE StringIds SET value = NULL WHERE id % 2 = 0",
                              "UPDATE StringIds SET value = x'fffe00' WHERE id % 2 = 1"],
        "strings-id-text": ["UPDATE StringIds SET id = 'id' || id"],
        "runtime-text-times": ["UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 'abc'"],
        "gpu-info-junk": ["UPDATE TARGET_INFO_GPU SET name = x'00', totalMemory = 'lots', smCount = -3"],
        "duplicated-kernels": [f"INSERT INTO {k} SELECT * FROM {k}", f"INSERT INTO {k} SELECT * FROM {k}"],
    }
    if not long:
        retyped = {key: v for i, (key, v) in enumerate(retyped.items()) if i % 2 == 0 or key == "null-start-end"}
    for key, stmts in retyped.items():
        table = "StringIds" if key.startswith("strings") else (
            "CUPTI_ACTIVITY_KIND_RUNTIME" if key.startswith("runtime") else
            "TARGET_INFO_GPU" if key.startswith("gpu") else k)
        yield Case("sqlite-schema", f"retype-{key}", sqlite_rebuilt(SQLITE, table, star, stmts))
    yield Case("sqlite-schema", "empty-database", lazy_write("trace.sqlite", _empty_sqlite))
    yield Case("sqlite-schema", "unrelated-database", lazy_write("trace.sqlite", lambda: _empty_sqlite("t")))
    nv = "NVTX_EVENTS"
    yield Case("sqlite-schema", "nvtx-text-in-times",
               sqlite_rebuilt(SQLITE_NVTX, nv, star, [f"UPDATE {nv} SET start = 'abc', \"end\" = 'x'"]))
    yield Case("sqlite-schema", "nvtx-unbalanced",
               sqlite_rebuilt(SQLITE_NVTX, nv, star, [f'UPDATE {nv} SET "end" = NULL', f"UPDATE {nv} SET text = NULL"]))


def _without(col: str) -> Callable[[list[str]], str]:
    """A projection of every column but `col` (a table rebuilt without it)."""

    def select(cols: list[str]) -> str:
        return ", ".join(f'"{c}"' for c in cols if c != col)

    return select


def _drop_all(rel: str) -> list[str]:
    con = sqlite3.connect(f"file:{real(rel)}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    finally:
        con.close()
    return [f'DROP TABLE "{n}"' for n in names]


def _empty_sqlite(table: str | None = None) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.sqlite"
        con = sqlite3.connect(p)
        con.execute("CREATE TABLE _keep (x)" if table is None else f"CREATE TABLE {table} (a INTEGER, b TEXT)")
        if table is None:
            con.execute("DROP TABLE _keep")
        con.commit()
        con.close()
        return p.read_bytes()


ZERO_NAMES = ["trace.json", "trace.json.gz", "trace.sqlite", "trace.sqlite.gz", "trace.nsys-rep", "trace.qdrep",
              "trace.ncu-rep", "trace.csv", "trace.db", "trace"]


def zero_byte(long: bool) -> Iterator[Case]:
    for n in ZERO_NAMES:
        yield Case("zero-byte", n, write(n, b""))


def directories(long: bool) -> Iterator[Case]:
    def junk_dir(d: Path, good: int = 1, extra: Callable[[Path], object] | None = None) -> Path:
        run = d / "ranks"
        run.mkdir()
        for i in range(good):
            src = RANK.replace("worker0", f"worker{i}") if i else RANK
            matches = sorted(real(str(Path(src).parent)).glob(f"worker{i}_*"))
            shutil.copyfile(matches[0], run / matches[0].name)
        if extra:
            extra(run)
        return run

    def mixed(run: Path) -> None:
        (run / "README").write_text("traces from my cluster\n")
        (run / "sub").mkdir()
        (run / "sub" / "nested.json.gz").write_bytes(b"not here")
        (run / "core.bin").write_bytes(rng_for("bin").randbytes(4096))

    yield Case("directory", "rank-plus-junk", lambda d: junk_dir(d, 1, mixed))
    yield Case("directory", "only-junk", lambda d: junk_dir(d, 0, mixed))
    yield Case("directory", "empty", lambda d: junk_dir(d, 0))
    yield Case("directory", "rank-plus-truncated-rank", lambda d: junk_dir(d, 1, lambda r: (
        r / "worker9_bad.pt.trace.json.gz").write_bytes(_cut(raw_bytes(RANK), 0.5))))
    yield Case("directory", "rank-plus-zero-byte-rank", lambda d: junk_dir(d, 1, lambda r: (
        r / "worker9_empty.json").write_bytes(b"")))
    yield Case("directory", "subdir-with-trace-name", lambda d: junk_dir(d, 1, lambda r: (r / "fake.json.gz").mkdir()))
    yield Case("directory", "binary-named-json", lambda d: junk_dir(d, 0, lambda r: (
        r / "trace.json").write_bytes(rng_for("bj").randbytes(2048))))
    yield Case("directory", "broken-symlink-rank", lambda d: junk_dir(d, 1, lambda r: (
        r / "gone.json.gz").symlink_to(r / "missing-target")))
    if long:
        yield Case("directory", "two-ranks-plus-junk", lambda d: junk_dir(d, 2, mixed), long_only=True)
        yield Case("directory", "same-rank-twice", lambda d: junk_dir(d, 1, lambda r: shutil.copyfile(
            real(RANK), r / "copy_of_worker0.json.gz")), long_only=True)


def huge_string(long: bool) -> Iterator[Case]:
    size = 100 << 20  # 100 MB, both budgets: the point is a name far larger than any real one
    yield Case("huge-string", "kineto-100MB-kernel-name", lazy_write("trace.json.gz", lambda: _huge_kineto(size)))
    yield Case("huge-string", "sqlite-100MB-kernel-name", _huge_sqlite(size))
    yield Case("huge-string", "csv-100MB-cell", lazy_write("trace.csv", lambda: _huge_csv(size)))
    # the gzip'd 100 MB names above inflate ~1000x and stop at the bomb check; these two reach the decoder
    yield Case("huge-string", "kineto-100MB-kernel-name-plain", lazy_write("trace.json", lambda: _huge_kineto(
        size, compress=False)))
    if long:
        yield Case("huge-string", "kineto-100MB-arg", lazy_write("trace.json.gz", lambda: _huge_kineto(size, True)),
                   long_only=True)
        yield Case("huge-string", "kineto-100MB-random-name-gz", lazy_write("trace.json.gz", lambda: _huge_kineto(
            size, random_name=True)), long_only=True)


def _huge_kineto(size: int, in_args: bool = False, compress: bool = True, random_name: bool = False) -> bytes:
    doc = kineto_doc()
    for ev in doc["traceEvents"]:
        if ev.get("cat") == "kernel":
            if in_args:
                ev.setdefault("args", {})["note"] = "A" * size
            elif random_name:  # incompressible: the gzip stays near 75 MB, well under the bomb ratio
                ev["name"] = base64.b64encode(rng_for("huge-random-name").randbytes(size * 3 // 4)).decode()
            else:
                ev["name"] = "K" * size
            break
    data = json.dumps(doc).encode()
    return gz(data) if compress else data


def _huge_sqlite(size: int) -> Make:
    def make(d: Path) -> Path:
        p = d / "trace.sqlite"
        shutil.copyfile(real(SQLITE), p)
        con = sqlite3.connect(p)
        try:
            con.execute("INSERT INTO StringIds (id, value) VALUES (999999, ?)", ("K" * size,))
            con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = 999999, demangledName = 999999")
            con.commit()
        finally:
            con.close()
        return p

    return make


def _huge_csv(size: int) -> bytes:
    head = b'"ID","Kernel Name","Device","gpu__time_duration.sum"\n"","","","nsecond"\n'
    return head + b'"0","' + b"K" * size + b'","0","1,000"\n'


def deep_nesting(long: bool) -> Iterator[Case]:
    depth = 100_000
    yield Case("deep-nesting", "top-level-arrays", write("trace.json", b"[" * depth + b"]" * depth))
    yield Case("deep-nesting", "in-traceEvents", write(
        "trace.json", b'{"traceEvents": ' + b"[" * depth + b"]" * depth + b"}"))
    yield Case("deep-nesting", "event-args-objects", lazy_write("trace.json.gz", lambda: gz(
        b'{"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": 0, "args": '
        + b'{"a": ' * depth + b"1" + b"}" * depth + b"}]}")))
    yield Case("deep-nesting", "metadata-arrays", lazy_write("trace.json.gz", lambda: gz(
        b'{"distributedInfo": ' + b"[" * depth + b"]" * depth + b', "traceEvents": []}')))
    yield Case("deep-nesting", "unclosed", write("trace.json", b'{"traceEvents": ' + b"[" * depth))
    if long:
        yield Case("deep-nesting", "million-levels-gz", lazy_write("trace.json.gz", lambda: gz(
            b'{"traceEvents": [' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"]}")), long_only=True)


def ncu_rep(long: bool) -> Iterator[Case]:
    for f in ([0.001, 0.1, 0.5, 0.9, 0.999] if long else [0.1, 0.9]):
        yield Case("ncu-rep", f"truncated-{f:g}", lazy_write("trace.ncu-rep", lambda f=f: _cut(raw_bytes(NCU_REP), f)))
    yield Case("ncu-rep", "bitflips-64", lazy_write(
        "trace.ncu-rep", lambda: flip_bits(raw_bytes(NCU_REP), 64, rng_for("ncu64"))))
    yield Case("ncu-rep", "garbage", lazy_write("trace.ncu-rep", lambda: rng_for("ncug").randbytes(100_000)))
    yield Case("ncu-rep", "json-renamed", lazy_write("trace.ncu-rep", lambda: json_bytes(KINETO)))
    if long:
        yield Case("ncu-rep", "header-only", lazy_write("trace.ncu-rep", lambda: raw_bytes(NCU_REP)[:64]),
                   long_only=True)


def nsys_rep(long: bool) -> Iterator[Case]:
    yield Case("nsys-rep", "garbage", lazy_write("trace.nsys-rep", lambda: rng_for("nsg").randbytes(100_000)))
    yield Case("nsys-rep", "json-renamed-qdrep", lazy_write("trace.qdrep", lambda: json_bytes(KINETO)))
    if long:  # each needs a real `nsys export`, seconds apiece
        for f in (0.1, 0.5, 0.9):
            yield Case("nsys-rep", f"truncated-{f:g}",
                       lazy_write("trace.nsys-rep", lambda f=f: _cut(raw_bytes(NSYS_REP), f)), long_only=True)
        yield Case("nsys-rep", "bitflips-64", lazy_write(
            "trace.nsys-rep", lambda: flip_bits(raw_bytes(NSYS_REP), 64, rng_for("nsr64"))), long_only=True)


RAW_HEAD = '"ID","Process ID","Process Name","Kernel Name","Device","Stream","Block Size","Grid Size",' \
           '"gpu__time_duration.sum","dram__bytes.sum"\n"","","","","","","","","nsecond","byte"\n'


def _ncu_row(i: int, name: str = "gemm", dur: str = "1,024") -> str:
    return f'"{i}","4242","prog","{name}","0","7","(128, 1, 1)","(64, 1, 1)","{dur}","2,048"\n'


def csv_cases(long: bool) -> Iterator[Case]:
    good = RAW_HEAD + "".join(_ncu_row(i) for i in range(4))
    variants: dict[str, bytes] = {
        "control-valid": good.encode(),
        "garbage-bytes": rng_for("csvg").randbytes(20_000),
        "header-only": RAW_HEAD.split("\n")[0].encode() + b"\n",
        "header-and-units": RAW_HEAD.encode(),
        "short-rows": (RAW_HEAD + '"0","1"\n"1"\n').encode(),
        "long-rows": (RAW_HEAD + _ncu_row(0).rstrip("\n") + ',"x","y","z"\n').encode(),
        "id-not-int": (RAW_HEAD + _ncu_row(0).replace('"0"', '"zero"', 1)).encode(),
        "values-junk": (RAW_HEAD + _ncu_row(0, dur="1,2,3,,") + _ncu_row(1, dur="nan") + _ncu_row(2, dur="-1e400")
                        ).encode(),
        "nul-bytes": good.encode().replace(b"gemm", b"ge\x00mm"),
        "latin1": good.encode().replace(b"gemm", "gémm".encode("latin-1")),
        "unbalanced-quotes": (RAW_HEAD + '"0","4242,"prog\n').encode(),
        "field-over-csv-limit": (RAW_HEAD + _ncu_row(0, name="N" * 200_000)).encode(),
        "bom": b"\xef\xbb\xbf" + good.encode(),
        "details-missing-columns": b'"ID","Section Name","Metric Name"\n"0","SOL","x"\n',
        "details-junk": (b'"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
                         b'"x","k","s","gpu__time_duration.sum","nsecond","abc"\n'),
        "many-columns": ('"ID",' + ",".join(f'"m{i}"' for i in range(20_000)) + "\n"
                         + '"0",' + ",".join("1" for _ in range(20_000)) + "\n").encode(),
    }
    for key, data in variants.items():
        yield Case("csv", key, write("trace.csv", data))
    yield Case("csv", "real-non-ncu-csv", lambda d: _copy(NON_NCU_CSV, d))
    yield Case("csv", "truncated-valid", write("trace.csv", good.encode()[: len(good) // 2]))


def _copy(rel: str, d: Path) -> Path:
    p = d / Path(rel).name
    shutil.copyfile(real(rel), p)
    return p


def misc(long: bool) -> Iterator[Case]:
    def fifo(d: Path) -> Path:
        p = d / "trace.json"
        os.mkfifo(p)
        return p

    def missing(d: Path) -> Path:
        return d / "does-not-exist.json.gz"

    def newline_name(d: Path) -> Path:
        p = d / "bad\nname.json"
        p.write_bytes(b"{not json")
        return p

    def symlink_loop(d: Path) -> Path:
        p = d / "loop.json"
        p.symlink_to(d / "loop.json")
        return p

    yield Case("misc", "fifo-named-json", fifo)
    yield Case("misc", "missing-path", missing)
    yield Case("misc", "newline-in-file-name", newline_name)
    yield Case("misc", "symlink-loop", symlink_loop)
    yield Case("misc", "sqlite-named-json", lambda d: _copy_as(SQLITE, d, "trace.json"))
    yield Case("misc", "json-named-sqlite", write("trace.sqlite", b'{"traceEvents": []}'))
    yield Case("misc", "kineto-named-csv", lambda d: _copy_as(KINETO, d, "trace.csv"))


def _copy_as(rel: str, d: Path, name: str) -> Path:
    p = d / name
    shutil.copyfile(real(rel), p)
    return p


CATEGORIES: list[tuple[str, Callable[[bool], Iterator[Case]], str]] = [
    ("truncated", truncated, "real traces cut at several points (JSON inside a valid gzip, raw SQLite)"),
    ("bit-flips", bitflips, "random bit flips in SQLite pages, in JSON text, in the gzip stream, in .ncu-rep"),
    ("gzip", gzip_cases, "gzip cut short, gzip of garbage, bad CRC, trailing junk, multi-member, a SQLite header "
                         "followed by zeros"),
    ("json-shape", json_shape, "JSON of the wrong shape: top level list/number/null, traceEvents not an array, "
                               "events that are strings/nulls/arrays, missing ph/ts/dur, dur negative/NaN/huge, "
                               "ts as strings, odd args and metadata"),
    ("sqlite-schema", sqlite_schema, "nsys SQLite with tables or columns dropped, text/blob/NULL in time and id "
                                     "columns, dangling string ids, empty and unrelated databases"),
    ("zero-byte", zero_byte, "empty files under every name advisor recognises"),
    ("directory", directories, "directories: a rank trace plus README/subdirectory/binary, only junk, empty, "
                               "a truncated or empty rank beside a good one, broken symlinks"),
    ("huge-string", huge_string, "a 100 MB kernel name (Kineto gzip'd, plain and incompressible; SQLite "
                                     "StringIds) and a 100 MB CSV cell"),
    ("deep-nesting", deep_nesting, "JSON nested 100,000 levels (top level, traceEvents, args, metadata, unclosed)"),
    ("ncu-rep", ncu_rep, ".ncu-rep truncated, bit-flipped, garbage, another format renamed"),
    ("nsys-rep", nsys_rep, ".nsys-rep garbage and truncated (long budget: real `nsys export` attempts)"),
    ("csv", csv_cases, "ncu CSV garbage: binary, header only, ragged rows, NUL bytes, latin-1, huge fields"),
    ("misc", misc, "a FIFO, a missing path, a newline in the file name, a symlink loop, misnamed formats"),
]


def cases(budget: str = "short") -> list[Case]:
    """Every case of the budget, in a stable order (cheap: nothing is read or written)."""
    long = budget == "long"
    out = [c for _, gen, _ in CATEGORIES for c in gen(long)]
    names = [f"{c.category}/{c.name}" for c in out]
    assert len(names) == len(set(names)), "case names must be unique"
    return out


# ------------------------------------------------------------------------------------------------
# Checking one outcome against the contract
# ------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    category: str
    name: str
    result: str  # "ingested" | "clean error" | "failure"
    seconds: float
    peak_rss: int | None = None
    why: str = ""
    error_line: str = ""


def tree_sha256(p: Path) -> str:
    """Content hash of a file or of every file under a directory (links not followed), names included."""
    h = hashlib.sha256()
    if p.is_symlink() or not p.exists():
        h.update(b"absent-or-link")
        return h.hexdigest()
    if p.is_file():
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    if not p.is_dir():
        h.update(b"special")
        return h.hexdigest()
    for f in sorted(p.rglob("*")):
        h.update(str(f.relative_to(p)).encode() + b"\0")
        if f.is_file() and not f.is_symlink():
            h.update(tree_sha256(f).encode())
    return h.hexdigest()


def judge(case_path: Path, rc: int | None, out: str, err: str) -> tuple[str, str, str]:
    """(result, why, error line) for one finished run of `advisor analyze CASE --format json`."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if "Traceback" in out + err:
        return "failure", "traceback", lines[-1] if lines else ""
    if rc == 0:
        try:
            doc = json.loads(out)
        except ValueError:
            return "failure", "exit 0 but stdout is not a JSON document", ""
        if not isinstance(doc, dict) or "inputs" not in doc:
            return "failure", "exit 0 but no analyze document", ""
        return "ingested", "", ""
    if rc != 2:
        return "failure", f"exit code {rc}", lines[-1] if lines else ""
    if len(lines) != 1:
        return "failure", f"{len(lines)} stderr lines", " | ".join(lines[:3])
    line = lines[0]
    name = case_path.name.replace("\n", " ")
    if not line.startswith("advisor: error: "):
        return "failure", "stderr line is not an advisor error", line
    if "internal error" in line:
        return "failure", "internal error", line
    if name not in line:
        return "failure", "error line does not name the file", line
    if "; " not in line:
        return "failure", "error line says nothing about what to do", line
    try:
        if json.loads(out).get("ok") is not False:
            return "failure", "json error document missing", line
    except ValueError:
        return "failure", "json error document missing", line
    return "clean error", "", line


# ------------------------------------------------------------------------------------------------
# Running cases in child processes
# ------------------------------------------------------------------------------------------------


@dataclass
class Running:
    index: int
    case: Case
    path: Path
    pid: int
    started: float
    out: Path
    err: Path
    sha: str


def _preload() -> None:
    """Import what `analyze` needs once in the parent, so each forked child starts warm."""
    import advisor.cli.commands.analyze  # noqa: F401
    import advisor.cli.main  # noqa: F401
    import advisor.engine.analyze  # noqa: F401
    import advisor.ingest  # noqa: F401
    from advisor.parsers.registry import FORMATS

    for fmt in FORMATS:
        __import__(f"advisor.parsers.{fmt.module}")


def _child(path: Path, out: Path, err: Path, cache: Path) -> int:
    """Body of a forked child: run the CLI with stdout/stderr redirected into files."""
    os.setpgid(0, 0)
    os.environ["ADVISOR_CACHE_DIR"] = str(cache)
    fo = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    fe = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fo, 1)
    os.dup2(fe, 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), encoding="utf-8")
    code = 70
    try:
        from advisor.cli.main import main

        code = main(["analyze", str(path), "--format", "json"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 2
    except BaseException:  # noqa: BLE001 - reported as a failure (a traceback) by the parent
        import traceback

        traceback.print_exc()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    return code


def _spawn(case: Case, path: Path, out: Path, err: Path, cache: Path, use_exec: bool) -> int:
    if use_exec:
        import subprocess

        with out.open("wb") as fo, err.open("wb") as fe:
            p = subprocess.Popen(
                [sys.executable, "-m", "advisor.cli.main", "analyze", str(path), "--format", "json"],
                stdout=fo, stderr=fe, start_new_session=True, env=dict(os.environ, ADVISOR_CACHE_DIR=str(cache)),
            )
        p.returncode = 0  # reaped by os.wait4 below, not by Popen
        return p.pid
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os._exit(_child(path, out, err, cache))
    return pid


def run_cases(selected: list[Case], jobs: int, use_exec: bool, keep: Path | None,
              report: Callable[[Outcome], None]) -> list[Outcome]:
    """Run every case in a child process (at most `jobs` at once), with the timeout and RSS measured."""
    if not use_exec:
        _preload()
    base = Path(tempfile.mkdtemp(prefix="advisor-corpus-")) if keep is None else keep
    cache = base / "_cache"
    cache.mkdir(parents=True, exist_ok=True)
    todo = list(enumerate(selected))
    running: dict[int, Running] = {}
    outcomes: list[Outcome] = []
    try:
        while todo or running:
            while todo and len(running) < jobs:
                i, case = todo.pop(0)
                d = base / f"{i:04d}"
                d.mkdir()
                indir = d / "in"
                indir.mkdir()
                try:
                    path = case.make(indir)
                except FileNotFoundError as e:
                    raise SystemExit(str(e)) from None
                out, err = d / "stdout", d / "stderr"
                sha = tree_sha256(path)
                pid = _spawn(case, path, out, err, cache, use_exec)
                running[pid] = Running(i, case, path, pid, time.monotonic(), out, err, sha)
            time.sleep(0.01)
            for pid, r in list(running.items()):
                done, status, ru = os.wait4(pid, os.WNOHANG)
                elapsed = time.monotonic() - r.started
                if done == 0 and elapsed > CASE_TIMEOUT_S:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                    _, status, ru = os.wait4(pid, 0)
                    o = Outcome(r.case.category, r.case.name, "failure", elapsed, ru.ru_maxrss * 1024,
                                f"hung: killed after {CASE_TIMEOUT_S:g} s")
                elif done == 0:
                    continue
                else:
                    o = _finished(r, status, ru.ru_maxrss * 1024, elapsed)
                del running[pid]
                outcomes.append(o)
                report(o)
                if keep is None:
                    shutil.rmtree(base / f"{r.index:04d}", ignore_errors=True)
    finally:
        for pid in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)
    order = {(c.category, c.name): i for i, c in enumerate(selected)}
    return sorted(outcomes, key=lambda o: order[(o.category, o.name)])


def _finished(r: Running, status: int, rss: int, elapsed: float) -> Outcome:
    rc = os.waitstatus_to_exitcode(status)
    out = r.out.read_text(errors="replace")
    err = r.err.read_text(errors="replace")
    result, why, line = judge(r.path, rc, out, err)
    if result != "failure" and tree_sha256(r.path) != r.sha:
        result, why = "failure", "input modified"
    if result != "failure" and rss > RSS_LIMIT_BYTES:
        result, why = "failure", f"peak RSS {rss >> 20} MiB over the {RSS_LIMIT_BYTES >> 20} MiB limit"
    if result == "failure" and not line:
        tail = [ln for ln in err.splitlines() if ln.strip()]
        line = tail[-1] if tail else ""
    return Outcome(r.case.category, r.case.name, result, elapsed, rss, why, line)


# ------------------------------------------------------------------------------------------------
# docs/reliability.md
# ------------------------------------------------------------------------------------------------


# Sections from this heading on are written by hand (the promises each tests/reliability/ module
# checks); `run` keeps them when it regenerates the corpus part above them.
KEPT_FROM = "## Promises under hostile use"


def hand_written(doc: Path) -> str:
    """The hand-written tail of `doc` (from KEPT_FROM to the end), "" when it has none."""
    old = doc.read_text() if doc.exists() else ""
    i = old.find("\n" + KEPT_FROM)
    return old[i:] if i >= 0 else ""


def render_doc(outcomes: list[Outcome], budget: str, mode: str) -> str:
    lines = [
        "# Reliability: the broken-input corpus",
        "",
        "Generated by `python scripts/mutate_corpus.py run --budget long`; do not edit by hand (rerun the script).",
        "Each case is a seeded mutation of a real trace from the shared fixture folder (or a file made from",
        f"nothing), run as `advisor analyze CASE --format json` in its own child process ({mode}).",
        "",
        "The contract, checked per case: exit 0 with a JSON result (**ingested**), or exit 2 with exactly one",
        "stderr line `advisor: error: ...` that names the file and says what to do, and `{\"ok\": false}` on",
        "stdout (**clean error**). Anything else is a **failure**: a traceback, an internal error, another exit",
        f"code, several lines, a run over {CASE_TIMEOUT_S:g} s (killed), a child peak RSS over",
        f"{RSS_LIMIT_BYTES >> 20} MiB (read with `os.wait4`), or the input changed (sha256 before and after).",
        "",
        f"Budget `{budget}`, seed {SEED}. The `short` budget runs under pytest in CI "
        "(tests/reliability/test_corpus.py), in-process.",
        "",
        "| category | cases tried | ingested | clean error | failures | slowest | peak RSS (max) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    cats = [c for c, _, _ in CATEGORIES]
    totals = [0, 0, 0, 0]
    for cat in cats:
        os_ = [o for o in outcomes if o.category == cat]
        if not os_:
            continue
        n = [len(os_), sum(o.result == "ingested" for o in os_), sum(o.result == "clean error" for o in os_),
             sum(o.result == "failure" for o in os_)]
        totals = [a + b for a, b in zip(totals, n, strict=True)]
        slow = max(o.seconds for o in os_)
        rss = max((o.peak_rss or 0) for o in os_)
        lines.append(f"| {cat} | {n[0]} | {n[1]} | {n[2]} | {n[3]} | {slow:.1f} s | {rss >> 20} MiB |")
    lines.append(f"| **all** | **{totals[0]}** | **{totals[1]}** | **{totals[2]}** | **{totals[3]}** | | |")
    lines += ["", "## What each category holds", ""]
    lines += [f"- **{c}**: {desc}." for c, _, desc in CATEGORIES]
    failures = [o for o in outcomes if o.result == "failure"]
    lines += ["", "## Failures", ""]
    if not failures:
        lines.append("None.")
    for o in failures:
        lines.append(f"- `{o.category}/{o.name}`: {o.why}" + (f" (`{_md_code(o.error_line)}`)" if o.error_line else ""))
    lines += ["", "## The error line each clean-error case ended with", "",
              "File paths are shortened to the file name.", "", "| case | error |", "|---|---|"]
    for o in outcomes:
        if o.result == "clean error":
            lines.append(f"| `{o.category}/{o.name}` | {_md_cell(_short(o.error_line))} |")
    lines += ["", "Limits that apply to every case are in [limits.md](limits.md).", ""]
    return "\n".join(lines)


def _short(line: str) -> str:
    import re

    line = line.removeprefix("advisor: error: ")
    return re.sub(r"/\S*/(advisor-corpus-|pytest-)\S*?/in/", "", line)[:300]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_code(text: str) -> str:
    return _short(text).replace("`", "'")[:200]


# ------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run every case in a child process and write docs/reliability.md")
    r.add_argument("--budget", choices=("short", "long"), default="long")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--exec", dest="use_exec", action="store_true", help="a fresh interpreter per case (slower)")
    r.add_argument("--only", help="run only cases whose 'category/name' contains this text")
    r.add_argument("--keep", type=Path, help="keep cases and their output under this directory")
    r.add_argument("--doc", type=Path, default=DOC, help="where to write the Markdown (default docs/reliability.md)")
    r.add_argument("--no-doc", action="store_true")
    b = sub.add_parser("build", help="write the cases under OUT")
    b.add_argument("out", type=Path)
    b.add_argument("--budget", choices=("short", "long"), default="short")
    ls = sub.add_parser("list", help="print the cases")
    ls.add_argument("--budget", choices=("short", "long"), default="short")
    args = p.parse_args(argv)

    selected = cases(args.budget)
    if args.cmd == "list":
        for c in selected:
            print(f"{c.category}/{c.name}")
        print(f"{len(selected)} cases", file=sys.stderr)
        return 0
    if args.cmd == "build":
        for i, c in enumerate(selected):
            d = args.out / f"{i:04d}-{c.category}-{c.name}"
            d.mkdir(parents=True, exist_ok=True)
            c.make(d)
        print(f"{len(selected)} cases written under {args.out}")
        return 0
    if args.only:
        selected = [c for c in selected if args.only in f"{c.category}/{c.name}"]

    def report(o: Outcome) -> None:
        mark = {"ingested": "ok ", "clean error": "err", "failure": "FAIL"}[o.result]
        extra = f"  {o.why}: {o.error_line[:160]}" if o.result == "failure" else ""
        print(f"{mark:4} {o.seconds:6.1f}s {((o.peak_rss or 0) >> 20):6d}MiB {o.category}/{o.name}{extra}", flush=True)

    t0 = time.monotonic()
    outcomes = run_cases(selected, args.jobs, args.use_exec, args.keep, report)
    failures = sum(o.result == "failure" for o in outcomes)
    print(f"{len(outcomes)} cases, {failures} failures, {time.monotonic() - t0:.0f} s", file=sys.stderr)
    if not args.no_doc and not args.only:
        mode = "a fresh interpreter per case" if args.use_exec else "forked from a warm parent"
        args.doc.write_text(render_doc(outcomes, args.budget, mode) + hand_written(args.doc))
        print(f"wrote {args.doc}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
