#!/usr/bin/env python3
"""Make large traces from real fixtures by tiling them in time (benchmark inputs, never committed).

    python benchmarks/scale.py kineto  TEMPLATE.json[.gz] OUT.json   --bytes 1e9
    python benchmarks/scale.py nsys    TEMPLATE.sqlite    OUT.sqlite --bytes 1e9
    python benchmarks/scale.py nvtx    TEMPLATE.sqlite    OUT.sqlite --kernels 10000000
    python benchmarks/scale.py all     [--out .bench] [--big-gb 10]     # the four benchmark inputs

Tiling keeps a trace consistent: tile k is the template shifted by k x (template span + a gap), and
every id the model joins on is offset by k x (largest id + 1): Kineto `External id`, `correlation`,
flow `id`, `Ev Idx`, `Sequence number` and `ProfilerStep#N`; nsys `correlationId`. Names and strings
are shared between tiles (StringIds are not copied, so every tile points at the same real names).
Metadata (process/thread names, device properties, the `Trace` span) appears once.

* Kineto JSON is stream-written: the template is decoded once (it is small), each tile's events are
  patched in place and serialized with orjson, so memory stays at a few template copies whatever
  the output size.
* nsys SQLite is tiled inside SQLite (`INSERT ... SELECT` over a tile-number table), no Python rows.
* `nvtx` builds a synthetic NVTX-heavy export from a real one: real kernel names, NVTX texts,
  threads and devices, with one push/pop range around every launch, an outer range around every
  10 launches, and each launch's kernel correlated by id (N kernels, N launches, 1.1 x N ranges).

Disk space is checked before writing; `all` scales the biggest Kineto file down to what fits.
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "fixtures" / "real"
KINETO_TEMPLATE = REAL / "param" / "resnet_kineto.json.gz"
NSYS_TEMPLATE = REAL / "nsys-ai" / "h100_2gpu_1s.sqlite"
STEP_RE = re.compile(r"ProfilerStep#(\d+)$")
ID_ARGS = ("External id", "correlation", "Ev Idx", "Sequence number")
GAP_US = 1000  # idle time between tiles
TIME, ID, STEP = 0, 1, 2


# ------------------------------------------------------------------------------------------ kineto


def _load_json(path: Path) -> dict[str, Any]:
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    doc: dict[str, Any] = orjson.loads(data)
    return doc


def _once(e: dict[str, Any]) -> bool:
    """Events that describe the capture rather than happen in it: written in the first tile only."""
    return e.get("ph") in ("M", "i", "I") or e.get("cat") == "Trace"


def _patches(events: list[dict[str, Any]]) -> tuple[list[tuple[dict[str, Any], str, Any, int]], int, int, int]:
    """(container, key, base value, kind) for every field a tile shifts, plus span, id and step offsets."""
    patches: list[tuple[dict[str, Any], str, Any, int]] = []
    t0, t1, max_id, max_step = None, None, 0, 0
    for e in events:
        ts = e.get("ts")
        if isinstance(ts, int | float):
            patches.append((e, "ts", ts, TIME))
            end = ts + (e.get("dur") or 0)
            t0 = ts if t0 is None or ts < t0 else t0
            t1 = end if t1 is None or end > t1 else t1
        fid = e.get("id")
        if isinstance(fid, int):
            patches.append((e, "id", fid, ID))
            max_id = max(max_id, fid)
        args = e.get("args")
        if isinstance(args, dict):
            for k in ID_ARGS:
                v = args.get(k)
                if isinstance(v, int) and v >= 0:
                    patches.append((args, k, v, ID))
                    max_id = max(max_id, v)
        m = STEP_RE.match(e.get("name") or "")
        if m:
            patches.append((e, "name", int(m.group(1)), STEP))
            max_step = max(max_step, int(m.group(1)))
    if t0 is None or t1 is None:
        raise SystemExit("template has no timed events")
    return patches, int(t1 - t0) + GAP_US, max_id + 1, max_step + 1


def scale_kineto(template: Path, out: Path, target_bytes: float) -> dict[str, Any]:
    """Write `out` by tiling the template's events in time until it holds about `target_bytes`."""
    doc = _load_json(template)
    events = doc.pop("traceEvents")
    once = [e for e in events if _once(e)]
    tiled = [e for e in events if not _once(e)]
    patches, span, id_off, step_off = _patches(tiled)
    tile_bytes = len(orjson.dumps(tiled))
    tiles = max(1, round(target_bytes / tile_bytes))
    for e in once:
        if e.get("cat") == "Trace" and isinstance(e.get("dur"), int | float):
            e["dur"] = span * tiles
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    offsets = [0, 0, 0]
    with tmp.open("wb", buffering=1 << 22) as f:
        head = orjson.dumps(doc)
        f.write(head[:-1] + (b"," if len(head) > 2 else b"") + b'"traceEvents":[')
        f.write(orjson.dumps(once)[1:-1])
        for k in range(tiles):
            offsets[TIME], offsets[ID], offsets[STEP] = k * span, k * id_off, k * step_off
            for obj, key, base, kind in patches:
                obj[key] = f"ProfilerStep#{base + offsets[STEP]}" if kind == STEP else base + offsets[kind]
            f.write(b"," + orjson.dumps(tiled)[1:-1])
        f.write(b"]}")
    tmp.rename(out)
    return {"tiles": tiles, "events": len(once) + tiles * len(tiled), "bytes": out.stat().st_size}


# -------------------------------------------------------------------------------------------- nsys

TIME_COLS = ("start", "end", "timestamp")
SKIP_TABLES = {"ANALYSIS_DETAILS", "TARGET_INFO_SESSION_START_TIME", "DIAGNOSTIC_EVENT"}


def _tables(con: sqlite3.Connection) -> dict[str, list[str]]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {n: [r[1] for r in con.execute(f'PRAGMA table_info("{n}")')] for n in names}


def _event_tables(con: sqlite3.Connection) -> dict[str, list[str]]:
    out = {}
    for name, cols in _tables(con).items():
        if name in SKIP_TABLES or name.startswith("ENUM_") or not set(cols) & set(TIME_COLS):
            continue
        if con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]:
            out[name] = cols
    return out


def _span(con: sqlite3.Connection, tables: dict[str, list[str]]) -> tuple[int, int]:
    lo, hi = None, None
    for name, cols in tables.items():
        for c in (c for c in TIME_COLS if c in cols):
            a, b = con.execute(f'SELECT min("{c}"), max("{c}") FROM "{name}"').fetchone()
            if a is not None:
                lo = a if lo is None or a < lo else lo
                hi = b if hi is None or b > hi else hi
    if lo is None or hi is None:
        raise SystemExit("template has no timed events")
    return lo, hi


def _open_out(template: Path, out: Path) -> sqlite3.Connection:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    shutil.copyfile(template, out)
    out.chmod(0o644)
    con = sqlite3.connect(out)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("PRAGMA cache_size = -262144")
    return con


def scale_nsys(template: Path, out: Path, target_bytes: float) -> dict[str, Any]:
    """Write `out`: the template with its event tables repeated in time, in SQL."""
    tiles = max(1, round(target_bytes / template.stat().st_size))
    con = _open_out(template, out)
    tables = _event_tables(con)
    lo, hi = _span(con, tables)
    span = hi - lo + GAP_US * 1000
    corr = max(
        (con.execute(f'SELECT max(correlationId) FROM "{n}"').fetchone()[0] or 0)
        for n, cols in tables.items() if "correlationId" in cols
    ) + 1
    con.execute("CREATE TEMP TABLE tiles (k INTEGER PRIMARY KEY)")
    con.executemany("INSERT INTO tiles VALUES (?)", [(k,) for k in range(1, tiles)])
    rows = 0
    for name, cols in tables.items():
        exprs = []
        for c in cols:
            if c in TIME_COLS:
                exprs.append(f'"{c}" + tiles.k * {span}')
            elif c == "correlationId":
                exprs.append(f'"{c}" + tiles.k * {corr}')
            else:
                exprs.append(f'"{c}"')
        con.execute(f'CREATE TEMP TABLE _t AS SELECT * FROM "{name}"')
        cur = con.execute(f'INSERT INTO "{name}" SELECT {", ".join(exprs)} FROM tiles CROSS JOIN _t ORDER BY tiles.k')
        rows += cur.rowcount
        con.execute("DROP TABLE _t")
        con.commit()
    _stretch_session(con, span * tiles)
    con.commit()
    con.close()
    return {"tiles": tiles, "rows_added": rows, "bytes": out.stat().st_size}


def _stretch_session(con: sqlite3.Connection, duration: int) -> None:
    cols = _tables(con).get("ANALYSIS_DETAILS", [])
    if "duration" in cols:
        con.execute("UPDATE ANALYSIS_DETAILS SET duration = ?", (duration,))
    if "stopTime" in cols and "startTime" in cols:
        con.execute("UPDATE ANALYSIS_DETAILS SET stopTime = startTime + ?", (duration,))


NVTX_CLEAR = (
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_OVERHEAD",
    "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
)
PERIOD_NS = 10_000  # one launch per thread every 10 us
LAUNCH_API = "cudaLaunchKernel"


def _cols(con: sqlite3.Connection, table: str, overrides: dict[str, str], alias: str) -> str:
    cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
    return ", ".join(overrides.get(c, f'{alias}."{c}"') for c in cols)


def scale_nvtx(template: Path, out: Path, kernels: int) -> dict[str, Any]:
    """A synthetic NVTX-heavy export over the template's real names, threads and devices."""
    con = _open_out(template, out)
    tx = con.execute
    # Real lanes: (launching thread, its device/stream/pid) from the template's correlated launches.
    tx("""CREATE TEMP TABLE lanes AS
          SELECT row_number() OVER (ORDER BY r.globalTid) - 1 AS lane, r.globalTid AS tid, min(k.rowid) AS krow
          FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_KERNEL k
            ON k.correlationId = r.correlationId AND k.globalPid = (r.globalTid >> 24) << 24
          WHERE r.globalTid IN (SELECT globalTid FROM NVTX_EVENTS) GROUP BY r.globalTid""")
    lanes = tx("SELECT count(*) FROM lanes").fetchone()[0]
    if not lanes:
        raise SystemExit("template has no NVTX thread that launches kernels")
    tx("CREATE TEMP TABLE _k AS SELECT l.lane, k.* FROM lanes l JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.rowid = l.krow")
    tx("""CREATE TEMP TABLE _r AS SELECT l.lane, r.* FROM lanes l JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
          ON r.rowid = (SELECT min(x.rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME x JOIN CUPTI_ACTIVITY_KIND_KERNEL k
                        ON k.correlationId = x.correlationId AND k.globalPid = (x.globalTid >> 24) << 24
                        WHERE x.globalTid = l.tid)""")
    tx("""CREATE TEMP TABLE knames AS SELECT row_number() OVER (ORDER BY demangledName) - 1 AS j, demangledName AS d,
          min(shortName) AS s FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY demangledName""")
    tx("""CREATE TEMP TABLE texts AS SELECT row_number() OVER (ORDER BY t) - 1 AS j, t FROM
          (SELECT DISTINCT regexp_t AS t FROM (SELECT coalesce(text, (SELECT value FROM StringIds WHERE id = textId))
           AS regexp_t FROM NVTX_EVENTS) WHERE regexp_t IS NOT NULL)""")
    n_names = tx("SELECT count(*) FROM knames").fetchone()[0]
    n_texts = tx("SELECT count(*) FROM texts").fetchone()[0]
    t0 = tx("SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    for t in NVTX_CLEAR:
        if tx("SELECT count(*) FROM sqlite_master WHERE name = ?", (t,)).fetchone()[0]:
            tx(f'DELETE FROM "{t}"')
    con.commit()
    seq = f"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {kernels - 1})"
    at = f"({t0} + (n.i / {lanes}) * {PERIOD_NS})"
    ker = _cols(con, "CUPTI_ACTIVITY_KIND_KERNEL", {
        "start": f"{at} + 4000", "end": f"{at} + 9000", "correlationId": "n.i + 1",
        "demangledName": "kn.d", "shortName": "kn.s", "mangledName": "kn.d",
    }, "_k")
    tx(f"""INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL {seq} SELECT {ker} FROM n
           JOIN _k ON _k.lane = n.i % {lanes} JOIN knames kn ON kn.j = n.i % {n_names}""")
    con.commit()
    run = _cols(con, "CUPTI_ACTIVITY_KIND_RUNTIME", {
        "start": f"{at} + 1000", "end": f"{at} + 3000", "correlationId": "n.i + 1",
    }, "_r")
    tx(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME {seq} SELECT {run} FROM n JOIN _r ON _r.lane = n.i % {lanes}")
    con.commit()
    nv_cols = [r[1] for r in con.execute('PRAGMA table_info("NVTX_EVENTS")')]

    def nvtx_insert(where: str, start: str, end: str, text: str) -> None:
        vals = {"start": start, "end": end, "eventType": "59", "text": text, "globalTid": "l.tid"}
        exprs = ", ".join(vals.get(c, "NULL") for c in nv_cols)
        tx(f"INSERT INTO NVTX_EVENTS {seq} SELECT {exprs} FROM n JOIN lanes l ON l.lane = n.i % {lanes} "
           f"JOIN texts tx ON tx.j = n.i % {n_texts} {where}")

    group = 10 * lanes  # outer range around every 10 launches of a thread
    nvtx_insert(f"WHERE n.i % {group} < {lanes}", at, f"{at} + {10 * PERIOD_NS - 1000}", "'step ' || (n.i / " +
                f"{group})")
    nvtx_insert("", f"{at} + 100", f"{at} + 8000", "tx.t")
    con.commit()
    _stretch_session(con, (kernels // lanes + 1) * PERIOD_NS)
    con.commit()
    counts = {t: tx(f'SELECT count(*) FROM "{t}"').fetchone()[0]
              for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")}
    con.close()
    return {"lanes": lanes, "kernel_names": n_names, "nvtx_texts": n_texts, **counts, "bytes": out.stat().st_size}


# ---------------------------------------------------------------------------------------------- cli


def _free_bytes(path: Path) -> int:
    path.mkdir(parents=True, exist_ok=True)
    return shutil.disk_usage(path).free


def make_all(out: Path, big_gb: float, kernels: int) -> dict[str, dict[str, Any]]:
    """The benchmark inputs: Kineto 1 GB and big_gb GB, nsys SQLite 1 GB, NVTX-heavy (`kernels` kernels)."""
    plan: list[tuple[str, float, Callable[[Path, float], dict[str, Any]]]] = [
        ("kineto-1g.json", 1e9, lambda p, b: scale_kineto(KINETO_TEMPLATE, p, b)),
        ("nsys-1g.sqlite", 1e9, lambda p, b: scale_nsys(NSYS_TEMPLATE, p, b)),
        ("nvtx-10m.sqlite", kernels * 250, lambda p, b: scale_nvtx(NSYS_TEMPLATE, p, kernels)),
        (f"kineto-{big_gb:g}g.json", big_gb * 1e9, lambda p, b: scale_kineto(KINETO_TEMPLATE, p, b)),
    ]
    done: dict[str, dict[str, Any]] = {}
    for name, size, make in plan:
        target = out / name
        if target.exists():
            done[name] = {"bytes": target.stat().st_size, "reused": True}
            continue
        free = _free_bytes(out) - 5e9  # keep 5 GB for caches and the rest of the machine
        if size > free:
            size = free
            print(f"{name}: only {free / 1e9:.1f} GB free: writing that much instead", file=sys.stderr)
        t = time.perf_counter()
        done[name] = make(target, size) | {"seconds": round(time.perf_counter() - t, 1)}
        print(f"{name}: {done[name]}", file=sys.stderr)
    return done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=("kineto", "nsys", "nvtx", "all"))
    ap.add_argument("template", nargs="?", type=Path)
    ap.add_argument("output", nargs="?", type=Path)
    ap.add_argument("--bytes", type=float, default=1e9, help="target size (kineto, nsys)")
    ap.add_argument("--kernels", type=int, default=10_000_000, help="kernels in the NVTX-heavy export")
    ap.add_argument("--out", type=Path, default=ROOT / ".bench", help="folder for `all` (gitignored)")
    ap.add_argument("--big-gb", type=float, default=10.0, help="size of the big Kineto file for `all`")
    args = ap.parse_args()
    if args.kind == "all":
        print(orjson.dumps(make_all(args.out, args.big_gb, args.kernels), option=orjson.OPT_INDENT_2).decode())
        return 0
    if args.template is None or args.output is None:
        ap.error(f"{args.kind} needs TEMPLATE and OUTPUT")
    if args.kind != "nvtx" and args.bytes > _free_bytes(args.output.parent) - 5e9:
        ap.error(f"not enough disk space for {args.bytes / 1e9:.1f} GB in {args.output.parent}")
    t = time.perf_counter()
    if args.kind == "kineto":
        info = scale_kineto(args.template, args.output, args.bytes)
    elif args.kind == "nsys":
        info = scale_nsys(args.template, args.output, args.bytes)
    else:
        info = scale_nvtx(args.template, args.output, args.kernels)
    print(orjson.dumps(info | {"seconds": round(time.perf_counter() - t, 1)}).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
