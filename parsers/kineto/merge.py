"""One rank file -> its tables and header facts; a run (one file or a directory of rank files) -> ParsedRun."""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from advisor.errors import InputError
from advisor.parsers import registry
from advisor.parsers.base import Interner, ParsedRun, ParseOptions
from advisor.parsers.kineto import parallel
from advisor.parsers.kineto.columns import FileColumns
from advisor.parsers.kineto.decode import SNIFF_BYTES, EventStream, Fallback, decode_whole, read_json_bytes, sniff
from advisor.parsers.kineto.mapping import mappings
from advisor.parsers.kineto.tables import Ctx, build_tables, lookup, merged_counts
from advisor.parsers.limits import inflate

FORMAT = "kineto"
TOOL = "PyTorch Profiler"
SUFFIXES = registry.get(FORMAT).suffixes
FALLBACK_SLICE = 200_000  # events handed to FileColumns at once on the whole-file path


class DistInfo(msgspec.Struct):
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None


@dataclass
class FileParts:
    """What one rank file contributes; device ids are still the file's local ordinals."""

    rank: int | None
    world_size: int | None
    tables: dict[str, pa.Table]
    devices_seen: set[int]
    device_props: dict[int, dict[str, Any]]
    vendor: str
    header: dict[str, Any]
    captured: set[str]
    counts: dict[str, int] = field(default_factory=dict)


def _quiet(fraction: float) -> None:
    return None


def read_columns(path: Path, limit: int, progress: Callable[[float], None] = _quiet) -> tuple[FileColumns, Any]:
    """Decode one file slice by slice into columns; (columns, header doc).

    The streaming reader handles every well-formed trace; for anything else (see decode.Fallback)
    the whole file is decoded at once, which reports errors and decodes odd events leniently.
    `progress` gets the fraction of the text read after each streamed slice (a slice is ~16 MB, so
    a 1 GB trace reports ~60 times; decoding is most of a Kineto parse); the whole-file path, for
    odd files only, reports nothing until it is done.
    """
    cuts = parallel.cut_points(path, parallel.processes(path.stat().st_size)) if path.is_file() else []
    if cuts:
        try:
            cols, doc = parallel.read_columns(path, limit, cuts, progress)
            return cols, doc
        except Fallback:
            pass
    stream = EventStream(path, limit)
    cols = FileColumns(stream.mode == "exact", stream.in_ns)
    try:
        for events in stream.chunks():
            cols.add(events)
            progress(stream.fraction())
        cols.counts = {**stream.notes, **cols.counts}  # the whole-file path meets them before bucketing
        return cols, stream.doc
    except Fallback:
        del cols, stream
    buf = read_json_bytes(path, limit)
    mode, in_ns = sniff(bytes(buf[:SNIFF_BYTES]))
    counts: dict[str, int] = {}
    doc = decode_whole(path, buf, mode, counts)
    del buf
    events, doc.traceEvents = doc.traceEvents, []
    cols = FileColumns(mode == "exact", in_ns, counts=counts)
    for i in range(0, len(events), FALLBACK_SLICE):
        cols.add(events[i : i + FALLBACK_SLICE])
    return cols, doc


def _dist(doc: Any) -> DistInfo:
    info = doc.distributedInfo
    if not isinstance(info, dict):
        return DistInfo()
    try:
        return msgspec.convert(info, DistInfo, strict=False)
    except msgspec.ValidationError:
        return DistInfo()


def _device_props(doc: Any) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    props = doc.deviceProperties if isinstance(doc.deviceProperties, list) else []
    spec = mappings().device_properties
    for p in props:
        if not isinstance(p, dict) or not isinstance(p.get("id"), int):
            continue
        row: dict[str, Any] = {col: next((p[k] for k in keys if k in p), None) for col, keys in spec.items()}
        if isinstance(p.get("computeMajor"), int) and isinstance(p.get("computeMinor"), int):
            row["compute_capability"] = f"{p['computeMajor']}.{p['computeMinor']}"
        out[p["id"]] = row
    return out


def _vendor(doc: Any, props: dict[int, dict[str, Any]], api_names: Iterable[str]) -> str:
    v = mappings().vendors
    if any(getattr(doc, k, None) is not None for k in v["amd_keys"]):
        return "amd"
    names = " ".join(str(p.get("name") or "") for p in props.values())
    if any(w in names for w in v["amd_words"]):
        return "amd"
    if any(getattr(doc, k, None) is not None for k in v["nvidia_keys"]) or any(w in names for w in v["nvidia_words"]):
        return "nvidia"
    for n in api_names:
        if n.startswith("hip"):
            return "amd"
        if n.startswith("cu"):
            return "nvidia"
    return "unknown"


def _header(doc: Any, unit_note: str) -> dict[str, Any]:
    keep = ("schemaVersion", "displayTimeUnit", "baseTimeNanoseconds", "host_name", "profile_memory")
    h = {k: getattr(doc, k) for k in keep if isinstance(getattr(doc, k), (int, float, str))}
    h["time_unit"] = unit_note
    return h


def _captured(c: FileColumns) -> set[str]:
    seen = c.roles_seen
    cap = set()
    if seen & {"kernel", "memcpy", "memset"}:
        cap |= {"kernels", "memops", "collectives", "devices"}
    if seen & {"runtime", "driver"}:
        cap.add("api_calls")
    if seen & {"cpu_op", "python_function"}:
        cap |= {"cpu_ops", "ranges", "collectives"}
    if seen & {"user_annotation", "gpu_user_annotation"}:
        cap.add("ranges")
    if "sync" in seen:
        cap.add("sync")
    if "memory" in seen:
        cap.add("memory_events")
    if "meta" in seen:
        cap.add("threads")
    return cap


def convert_file(
    path: Path,
    options: ParseOptions,
    interner: Interner,
    ids: tuple[int, int],
    base_ns: int | None,
    progress: Callable[[float], None] = _quiet,
) -> FileParts:
    """Decode one rank file and build its tables. `base_ns`: the run's clock origin (directories).

    `progress` gets the fraction of this file done: decoding fills 95%, building the tables the rest.
    """
    cols, doc = read_columns(path, options.max_json_bytes, lambda f: progress(0.95 * f))
    progress(0.95)
    own_base = doc.baseTimeNanoseconds if isinstance(doc.baseTimeNanoseconds, int) else None
    shift = own_base - base_ns if base_ns is not None and own_base is not None else 0
    ctx = Ctx(interner, cols, shift, *ids)
    dist = _dist(doc)
    tables = build_tables(ctx, dist.rank)
    counts = merged_counts(cols)
    _align_memory_devices(tables, counts)
    props = _device_props(doc)
    progress(1.0)
    return FileParts(
        rank=dist.rank,
        world_size=dist.world_size,
        tables=tables,
        devices_seen=_devices_seen(tables),
        device_props=props,
        vendor=_vendor(doc, props, cols.runtime_names),
        header=_header(doc, "ns" if cols.in_ns else "us") | {"next_ids": (ctx.next_range_id, ctx.next_op_id)},
        captured=_captured(cols),
        counts=counts,
    )


def _align_memory_devices(tables: dict[str, pa.Table], counts: dict[str, int]) -> None:
    """[memory] events name the torch device index; ROCm GPU activity names the HSA agent (CPUs
    first, so GPU 0 shows as device 2). When the two sets disagree, map one onto the other in
    order if they have the same size, else drop the memory-event device (counted)."""
    gpu: set[int] = set()
    for name in ("kernels", "memops"):
        gpu |= {d for d in pc.unique(tables[name]["device_id"]).to_pylist() if d is not None}
    mem_t = tables["memory_events"]
    mem = {d for d in pc.unique(mem_t["device_id"]).to_pylist() if d is not None}
    if not gpu or not mem or mem <= gpu:
        return
    mapping = dict(zip(sorted(mem), sorted(gpu), strict=True)) if len(mem) == len(gpu) else {}
    counts["memory_device_ids_remapped" if mapping else "memory_device_ids_dropped"] = len(mem)
    keys = pa.array(list(mapping), pa.int32())
    vals = pa.array(list(mapping.values()), pa.int32())
    col = lookup(mem_t["device_id"].combine_chunks(), keys, vals)
    tables["memory_events"] = mem_t.set_column(0, "device_id", col)


def _devices_seen(tables: dict[str, pa.Table]) -> set[int]:
    seen: set[int] = set()
    for name in ("kernels", "memops", "sync", "ranges", "memory_events"):
        col = tables[name]["device_id"]
        seen |= {d for d in pc.unique(col).to_pylist() if d is not None}
    return seen


# --------------------------------------------------------------------------------------------
# Run = one file or a directory of rank files


def rank_files(path: Path) -> list[Path]:
    """The trace files of a run: the file itself, or a directory's *.json[.gz] that look like traces.

    A directory often holds other JSON beside the rank traces (a PROVENANCE.json, a config dump):
    a file whose first MiB names neither `traceEvents` nor an event phase is not a rank trace.
    """
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(SUFFIXES))
    traces = [f for f in files if _looks_like_trace(f)]
    if not traces:
        raise InputError(
            f"{path}: directory holds no Kineto trace files (*.json / *.json.gz with traceEvents)",
            "pass a trace file, or a directory of rank traces",
        )
    return traces


def skipped_files(path: Path, traces: list[Path]) -> dict[str, str]:
    """A directory's *.json[.gz] files that were not read as ranks, each with why."""
    if not path.is_dir():
        return {}
    read = set(traces)
    return {
        f.name: "empty file" if f.stat().st_size == 0 else "not a Kineto trace (no traceEvents in its first MiB)"
        for f in sorted(path.iterdir())
        if f.is_file() and f.name.lower().endswith(SUFFIXES) and f not in read
    }


def _looks_like_trace(f: Path) -> bool:
    try:
        with f.open("rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        if gz:
            import gzip

            with gzip.open(f, "rb") as g:
                head = g.read(1 << 20)
        else:
            with f.open("rb") as fh:
                head = fh.read(1 << 20)
    except (OSError, EOFError, ValueError):
        return True  # damaged: let the parser report it with its own one-line error
    return b'"traceEvents"' in head or b'"ph"' in head


def _base_ns(files: list[Path], limit: int) -> int | None:
    """Directories: the earliest baseTimeNanoseconds, read from each file's tail, is the run clock."""
    bases = []
    for f in files:
        head = _tail_text(f, limit)
        m = re.search(rb'"baseTimeNanoseconds"\s*:\s*(\d+)', head)
        if m:
            bases.append(int(m.group(1)))
    return min(bases) if bases else None


def _tail_text(f: Path, limit: int) -> bytes:
    """The last 64 KiB of the (decompressed) file, where Kineto writes its trailing header keys.

    Damaged or oversized files give b"": parsing the file itself then reports the problem.
    """
    try:
        with f.open("rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                fh.seek(max(0, f.stat().st_size - 65536))
                return fh.read()
        tail = b""
        for chunk in inflate(f, limit):
            tail = (tail + chunk)[-65536:]
        return tail
    except (OSError, InputError):
        return b""


def _device_ids(parts: list[FileParts]) -> dict[tuple[int, int], int]:
    return device_ids([p.devices_seen or set(p.device_props) for p in parts])


def device_ids(seen: list[set[int]]) -> dict[tuple[int, int], int]:
    """(file index, local ordinal) -> run-unique device_id, from each file's devices in file order (a Dask map
    gets them from its tasks: advisor.distributed).

    The local ordinal is kept when it is already unique across the run (one file, or ranks that
    each use a different GPU), so `device 3` still means cuda:3; otherwise devices are numbered in
    rank order. A file that ran nothing on a GPU (CPU-side ops only, or a CUPTI-profiler capture without
    kernel events) keeps the GPUs its deviceProperties list, so the run still says what it ran on.
    """
    pairs = [(i, d) for i, devs in enumerate(seen) for d in sorted(devs)]
    locals_ = [d for _, d in pairs]
    if len(set(locals_)) == len(locals_):
        return {(i, d): d for i, d in pairs}
    return {pair: n for n, pair in enumerate(pairs)}


def _remap(t: pa.Table, mapping: dict[int, int]) -> pa.Table:
    if "device_id" not in t.column_names or not mapping or all(k == v for k, v in mapping.items()):
        return t
    keys = pa.array(list(mapping), pa.int32())
    vals = pa.array(list(mapping.values()), pa.int32())
    i = t.column_names.index("device_id")
    return t.set_column(i, "device_id", lookup(t["device_id"].combine_chunks(), keys, vals))


def _devices_table(parts: list[FileParts], ids: dict[tuple[int, int], int]) -> pa.Table:
    rows = []
    for (fi, local), dev in sorted(ids.items(), key=lambda kv: kv[1]):
        p = parts[fi]
        props = p.device_props.get(local, {})
        rows.append(
            {
                "device_id": dev,
                "rank": p.rank,
                "local_index": local,
                "host": p.header.get("host_name"),
                "name": props.get("name"),
                "vendor": p.vendor,
                "compute_capability": props.get("compute_capability"),
                "sm_count": props.get("sm_count"),
                "memory_bytes": props.get("memory_bytes"),
                "max_threads_per_sm": props.get("max_threads_per_sm"),
                "max_registers_per_sm": props.get("max_registers_per_sm"),
                "max_shared_memory_per_sm_bytes": props.get("max_shared_memory_per_sm_bytes"),
            }
        )
    return pa.Table.from_pylist(rows) if rows else pa.table({"device_id": pa.array([], pa.int32())})


def _run_row(parts: list[FileParts], files: list[Path], base: int | None) -> dict[str, Any]:
    h = parts[0].header
    ranks = sorted({p.rank for p in parts if p.rank is not None})
    worlds = {p.world_size for p in parts if p.world_size is not None}
    starts = [pc.min(p.tables[t]["start_ns"]).as_py() for p in parts for t in ("kernels", "cpu_ops", "api_calls")]
    starts = [s for s in starts if s is not None]
    origin = base if base is not None else h.get("baseTimeNanoseconds")
    first = min(starts) if starts else None
    capture = None
    if first is not None:
        capture = first + origin if isinstance(origin, int) else (first if first > 10**18 else None)
    hosts = sorted({str(p.header["host_name"]) for p in parts if p.header.get("host_name")})
    return {
        "format": FORMAT,
        "tool": TOOL,
        "tool_version": None,
        "export_schema": str(h["schemaVersion"]) if "schemaVersion" in h else None,
        "capture_start_unix_ns": capture,
        "host": ",".join(hosts) or None,
        "world_size": max(worlds) if worlds else (len(files) if len(files) > 1 else None),
        "ranks": ",".join(map(str, ranks)) or None,
    }


def _notes(parts: list[FileParts], files: list[Path]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for p in parts:
        for k, v in p.counts.items():
            counts[k] = counts.get(k, 0) + v
    notes: dict[str, Any] = {f"cleaned_{k}": v for k, v in counts.items() if v}
    notes["time_unit"] = sorted({p.header["time_unit"] for p in parts})
    units = sorted({str(p.header.get("displayTimeUnit")) for p in parts if p.header.get("displayTimeUnit")})
    if units:
        notes["displayTimeUnit"] = units
    notes["files"] = [f.name for f in files]
    notes["device_properties_listed"] = sum(len(p.device_props) for p in parts)
    return notes


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a run is parsed.

    Decoding and columnizing allocate millions of objects, and every few hundred container
    allocations (the grid/block lists of kernel args, the per-field lists) start a collection that
    walks the process's tracked objects: ~1.4 s of CPU on the 1 GB trace (~2,000 collections, timed
    with gc.callbacks), for nothing, as the parse makes no reference cycles (event structs are
    `gc=False`; refcounting frees each slice).
    The collector is switched back on afterwards if it was on, and then collects whatever else
    piled up meanwhile (another thread's cycles wait until then)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def parse(path: Path, options: ParseOptions) -> ParsedRun:
    """Parse a Kineto trace file, or a directory of rank files, into one run."""
    with _collector_paused():
        return _parse(Path(path), options)


def _parse(path: Path, options: ParseOptions) -> ParsedRun:
    files = rank_files(path)
    base = _base_ns(files, options.max_json_bytes) if len(files) > 1 else None
    interner = Interner()
    parts: list[FileParts] = []
    ids = (0, 0)
    for n, f in enumerate(files):

        def file_progress(fraction: float, n: int = n, name: str = f.name) -> None:
            options.progress(n + fraction, len(files), f"kineto {name}")

        file_progress(0.0)
        part = convert_file(f, options, interner, ids, base, file_progress)
        ids = part.header.pop("next_ids")
        parts.append(part)
    _check_ranks(path, parts)
    dev_ids = _device_ids(parts)
    tables: dict[str, list[pa.Table]] = {}
    for i, p in enumerate(parts):
        local = {d: dev_ids[(i, d)] for d in p.devices_seen}
        for name, t in p.tables.items():
            tables.setdefault(name, []).append(_remap(t, local))
    out = {name: pa.concat_tables(ts, promote_options="permissive") for name, ts in tables.items()}
    out["devices"] = _devices_table(parts, dev_ids)
    out["strings"] = interner.table()
    captured = set().union(*(p.captured for p in parts))
    notes = _notes(parts, files)
    if skipped := skipped_files(path, files):
        notes["files_skipped"] = skipped  # a zero-byte rank file is a lost rank: say so, never drop it silently
    return ParsedRun(tables=out, run=_run_row(parts, files, base), captured=captured, notes=notes)


def _check_ranks(path: Path, parts: list[FileParts]) -> None:
    """Two files claiming the same rank would merge two runs into one: refuse, naming the rank."""
    if len(parts) < 2:
        return
    ranks = [p.rank for p in parts]
    dup = {r for r in ranks if r is not None and ranks.count(r) > 1}
    if dup:
        raise InputError(
            f"{path}: several files claim rank {sorted(dup)[0]} (distributedInfo.rank)",
            "a directory must hold one trace per rank of a single run",
        )
