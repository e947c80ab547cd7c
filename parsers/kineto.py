"""PyTorch profiler (Kineto) Chrome-trace JSON -> model tables.

Reads one `.json` / `.json.gz` file, or a directory of rank files read as one run. Why it is built
the way it is:

* Speed and memory: users bring 1-10 GB traces. The JSON is decoded once by msgspec into small
  typed Structs that keep only the fields the model needs (unknown keys are skipped by the C
  decoder, never materialised), the raw text is dropped as soon as it is decoded, and columns are
  built as Python lists / Arrow arrays per category, never as per-event dicts.
* Exact times: Kineto writes `ts`/`dur` in microseconds (`displayTimeUnit` is only a display
  hint for chrome://tracing). Floats are split into whole + fraction before scaling so ns
  digits survive; epoch-based traces with ns fractions (which a float64 cannot hold) are decoded
  with Decimal timestamps instead, chosen by sniffing the first megabyte.
* Category names changed over the years (`Kernel` -> `kernel`, `Runtime` -> `cuda_runtime`,
  `Operator` -> `cpu_op`); those mappings live in `mappings/kineto.toml`, not in code.
* Bad input is an InputError / LimitExceeded with one line naming the file and the problem; odd
  values (missing or negative durations, events without a timestamp) are cleaned on purpose and
  counted in `ParsedRun.notes`.
"""

from __future__ import annotations

import bisect
import decimal
import mmap
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from advisor.errors import InputError
from advisor.parsers.base import Interner, ParsedRun, ParseOptions
from advisor.parsers.limits import inflate, too_big

FORMAT = "kineto"
TOOL = "PyTorch Profiler"
SUFFIXES = (".json", ".json.gz")
SNIFF_BYTES = 1 << 20
INT64_NS_LIMIT = 9.2e18  # |time| in ns that still fits int64 (about 292 years)
# Below 2**43 us a float64 holds a Kineto timestamp to better than 0.5 ns, so whole+fraction
# splitting recovers the exact ns digits; above it (epoch-based us with ns fractions) we need Decimal.
FLOAT_EXACT_US = 2**43
EPOCH_NS_MIN = 10**17  # a `ts` this large cannot be microseconds (3000+ years): the file writes ns
STEP_RE = re.compile(r"ProfilerStep#(\d+)$")
MEMCPY_RE = re.compile(r"Memcpy (\w+)(?: \((\w+) -> (\w+)\))?")
MEMSET_RE = re.compile(r"Memset(?: \((\w+)\))?")
TS_SNIFF_RE = re.compile(rb'"ts"\s*:\s*(-?\d+)(?:\.(\d+))?')
COMMS_OP = "record_param_comms"


# --------------------------------------------------------------------------------------------
# Mappings (data)


@dataclass(frozen=True)
class Mappings:
    """The contents of mappings/kineto.toml, in the shapes the converter looks them up."""

    roles: dict[str, str]
    sync_kinds: dict[str, str]
    copy_kinds: dict[str, str]
    memory_kinds: dict[str, str]
    collective_kinds: dict[str, str]
    nccl_kernel_kinds: list[tuple[str, str]]
    dtype_bytes: dict[str, int]
    device_properties: dict[str, list[str]]
    vendors: dict[str, list[str]]


@cache
def mappings() -> Mappings:
    text = resources.files("advisor.parsers").joinpath("mappings/kineto.toml").read_text("utf-8")
    raw = tomllib.loads(text)
    return Mappings(
        roles={cat: spec["role"] for cat, spec in raw["categories"].items()},
        sync_kinds=raw["sync_kinds"],
        copy_kinds=raw["copy_kinds"],
        memory_kinds=raw["memory_kinds"],
        collective_kinds=raw["collective_kinds"],
        nccl_kernel_kinds=list(raw["nccl_kernel_kinds"].items()),
        dtype_bytes=raw["dtype_bytes"],
        device_properties=raw["device_properties"],
        vendors=raw["vendors"],
    )


# --------------------------------------------------------------------------------------------
# Decoding: only the fields we use; everything else is skipped inside msgspec.

Num = int | float
Id = int | str


EMPTY_RAW = msgspec.Raw()


class Args(msgspec.Struct, gc=False):
    """The `args` keys the model uses, across event kinds and Kineto versions."""

    device: int | None = None
    stream: Id | None = None
    correlation: int | None = None
    external_id: int | None = msgspec.field(default=None, name="External id")
    external_id_old: int | None = msgspec.field(default=None, name="external id")
    context: int | None = None
    registers: int | None = msgspec.field(default=None, name="registers per thread")
    shared_memory: int | None = msgspec.field(default=None, name="shared memory")
    grid: list[int] | str | None = None  # Triton cpu_ops write "grid(100,)" here
    block: list[int] | str | None = None
    bytes: Num | None = None
    input_dims: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input Dims")
    input_dims_old: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input dims")
    input_type: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input type")
    flops: Num | None = None
    sequence_number: int | None = msgspec.field(default=None, name="Sequence number")
    collective: str | None = msgspec.field(default=None, name="Collective name")
    in_nelems: int | None = msgspec.field(default=None, name="In msg nelems")
    dtype: str | None = None
    group_size: int | None = msgspec.field(default=None, name="Group size")
    pg_name: str | None = msgspec.field(default=None, name="Process Group Name")
    mem_bytes: int | None = msgspec.field(default=None, name="Bytes")
    total_allocated: int | None = msgspec.field(default=None, name="Total Allocated")
    total_reserved: int | None = msgspec.field(default=None, name="Total Reserved")
    addr: int | None = msgspec.field(default=None, name="Addr")
    mem_device_id: int | None = msgspec.field(default=None, name="Device Id")
    mem_device_type: int | None = msgspec.field(default=None, name="Device Type")
    sync_kind: str | None = msgspec.field(default=None, name="cuda_sync_kind")
    label: str | None = msgspec.field(default=None, name="name")


NO_ARGS = Args()
NO_DIM = (None, None, None)


class Event(msgspec.Struct, gc=False):
    ph: str | None = None
    cat: str | None = None
    name: str | None = None
    pid: Id | None = None
    tid: Id | None = None
    ts: Num | None = None
    dur: Num | None = None
    id: Id | None = None
    args: Args | None = None


class ExactEvent(Event, gc=False):
    """Same event with Decimal timestamps, for epoch-based traces with ns fractions."""

    ts: decimal.Decimal | None = None  # type: ignore[assignment]


class DistInfo(msgspec.Struct):
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None


def _doc_type(event: type[Event], events: Any) -> Any:
    """Top-level struct: traceEvents typed, the header keys we read kept loose (validated by hand)."""
    fields: list[tuple[str, Any, Any]] = [
        ("traceEvents", events, msgspec.NODEFAULT),
        ("deviceProperties", Any, None),
        ("distributedInfo", Any, None),
        ("displayTimeUnit", Any, None),
        ("schemaVersion", Any, None),
        ("baseTimeNanoseconds", Any, None),
        ("host_name", Any, None),
        ("profile_memory", Any, None),
    ]
    vendor_keys = mappings().vendors["amd_keys"] + mappings().vendors["nvidia_keys"]
    fields += [(k, Any, None) for k in vendor_keys]
    return msgspec.defstruct(f"Doc_{event.__name__}", fields)


@cache
def _decoders() -> dict[str, msgspec.json.Decoder[Any]]:
    return {
        "float": msgspec.json.Decoder(_doc_type(Event, list[Event])),
        "exact": msgspec.json.Decoder(_doc_type(ExactEvent, list[ExactEvent])),
        "raw": msgspec.json.Decoder(_doc_type(Event, list[msgspec.Raw])),
    }


# --------------------------------------------------------------------------------------------
# Reading


def _read_json_bytes(path: Path, limit: int) -> Any:
    """The decompressed JSON text as a buffer (bytearray, or a read-only mmap for plain files).

    gzip is inflated in chunks by `limits.inflate` (byte limit and decompression-bomb ratio guard),
    so a bad or hostile file fails early with LimitExceeded instead of exhausting memory.
    """
    try:
        with path.open("rb") as f:
            magic = f.read(2)
            if magic == b"\x1f\x8b":
                return _inflate(path, limit)
            size = path.stat().st_size
            if size > limit:
                raise too_big(path, f"{size} bytes of JSON:", limit)
            if size == 0:
                raise InputError(f"{path}: empty file", "re-export the trace; a Kineto trace is a JSON object")
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})", "check the path and permissions") from None


def _inflate(path: Path, limit: int) -> bytearray:
    buf = bytearray()
    for chunk in inflate(path, limit):
        buf += chunk
    if not buf:
        raise InputError(f"{path}: gzip holds no data", "re-export the trace")
    return buf


def _sniff(buf: Any) -> tuple[str, bool]:
    """Pick the timestamp decoder from the first megabyte: ('float'|'exact', ts_in_ns)."""
    head = bytes(buf[:SNIFF_BYTES])
    mode, in_ns = "float", False
    for m in TS_SNIFF_RE.finditer(head):
        whole = abs(int(m.group(1)))
        if whole >= EPOCH_NS_MIN:
            in_ns = True
        if m.group(2) is not None and whole >= FLOAT_EXACT_US:
            mode = "exact"
    return mode, in_ns


def _decode(path: Path, buf: Any, mode: str, notes: dict[str, Any]) -> Any:
    """Decode with the fast typed decoder; on a type surprise, fall back to per-event decoding."""
    try:
        return _decoders()[mode].decode(buf)
    except msgspec.DecodeError as e:
        if isinstance(e, msgspec.ValidationError) and "$.traceEvents[" in str(e):
            return _decode_lenient(path, buf, mode, notes)
        raise _shape_error(path, e) from None
    except (RecursionError, UnicodeDecodeError) as e:
        raise _shape_error(path, e) from None


def _shape_error(path: Path, e: Exception) -> InputError:
    msg = str(e).splitlines()[0][:200]
    if isinstance(e, RecursionError):  # msgspec stops at about 1,000 levels: no trace nests like that
        return InputError(f"{path}: JSON nested too deeply to be a trace ({msg})", "re-export the trace")
    if isinstance(e, UnicodeDecodeError):
        return InputError(f"{path}: JSON text is not valid UTF-8 ({msg})", "re-export the trace")
    if isinstance(e, msgspec.ValidationError):
        return InputError(
            f"{path}: not a Kineto trace ({msg})",
            "expected a JSON object with a traceEvents array (torch.profiler export_chrome_trace)",
        )
    return InputError(f"{path}: invalid or truncated JSON ({msg})", "re-export the trace")


def _decode_lenient(path: Path, buf: Any, mode: str, notes: dict[str, Any]) -> Any:
    """Slow path: one event at a time, coercing loose types; events that still do not fit are dropped."""
    try:
        doc = _decoders()["raw"].decode(buf)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError) as e:
        raise _shape_error(path, e) from None
    etype = ExactEvent if mode == "exact" else Event
    dec = msgspec.json.Decoder(etype, strict=False)
    bare = msgspec.json.Decoder(msgspec.defstruct("Bare", [("args", Any, None)], bases=(etype,)), strict=False)
    events: list[Event] = []
    for i, raw in enumerate(doc.traceEvents):
        if not bytes(raw).lstrip()[:1] == b"{":
            raise InputError(f"{path}: traceEvents[{i}] is not a JSON object", "the trace is malformed; re-export it")
        try:
            events.append(dec.decode(raw))
            continue
        except msgspec.ValidationError:
            pass
        try:  # keep the event, lose its odd args
            ev: Any = bare.decode(raw)
            events.append(etype(ev.ph, ev.cat, ev.name, ev.pid, ev.tid, ev.ts, ev.dur, ev.id, None))
            notes["events_args_dropped"] = notes.get("events_args_dropped", 0) + 1
        except msgspec.ValidationError:
            notes["events_dropped_bad_fields"] = notes.get("events_dropped_bad_fields", 0) + 1
    doc.traceEvents = events
    return doc


# --------------------------------------------------------------------------------------------
# Small helpers


def _as_int(v: Any) -> int | None:
    """pid/tid/stream values: ints, numeric strings, or 'stream 7' (old GPU rows)."""
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        s = v.rsplit(" ", 1)[-1]
        if s.lstrip("-").isdigit():
            return int(s)
    return None


def _fits(v: Any, bound: float) -> bool:
    """A finite number under `bound` in magnitude (NaN, inf and 1e300 are not times, just damage)."""
    try:
        return v is not None and bool(abs(v) < bound)
    except (TypeError, ArithmeticError):
        return False


def _ns(values: Sequence[Any], exact: bool, in_ns: bool) -> pa.Array:
    """Trace times -> int64 ns. Floats are split into whole + fraction so ns digits survive.

    Values that cannot be an int64 ns time (non-finite, or past about 292 years) become null.
    """
    bound = INT64_NS_LIMIT if in_ns else INT64_NS_LIMIT / 1000
    values = [v if _fits(v, bound) else None for v in values]
    if exact:
        return pa.array([None if v is None else round(v.scaleb(3)) for v in values], pa.int64())
    if in_ns:
        return pa.array([None if v is None else round(v) for v in values], pa.int64())
    arr = pa.array(values, pa.float64())
    whole = pc.floor(arr)
    frac = pc.round(pc.multiply(pc.subtract(arr, whole), 1000.0))
    return pc.add(pc.multiply(pc.cast(whole, pa.int64()), 1000), pc.cast(frac, pa.int64()))


def _durations(values: Sequence[Any], exact: bool, in_ns: bool, counts: dict[str, int]) -> pa.Array:
    """dur -> ns; missing becomes 0 and negative becomes 0, both counted (never silently)."""
    dur = _ns([None if v is None else (decimal.Decimal(v) if exact else v) for v in values], exact, in_ns)
    missing = dur.null_count
    negative = int(pc.sum(pc.less(dur, 0)).as_py() or 0)
    if missing:
        counts["missing_dur"] = counts.get("missing_dur", 0) + missing
    if negative:
        counts["negative_dur"] = counts.get("negative_dur", 0) + negative
    if missing or negative:
        dur = pc.if_else(pc.less(pc.fill_null(dur, 0), 0), 0, pc.fill_null(dur, 0))
    return dur


def _nest(
    pids: Sequence[Any], tids: Sequence[Any], starts: pa.Array, ends: pa.Array
) -> tuple[list[int | None], list[int]]:
    """Parent row index and depth of each interval among those on the same (pid, tid).

    Sorted by key, start, then longest first, so an enclosing interval comes before its children;
    a stack per key then gives the innermost open interval that still covers the start.
    """
    n = len(starts)
    if n == 0:
        return [], []
    t = pa.table({"p": pa.array(pids, pa.int64()), "t": pa.array(tids, pa.int64()), "s": starts, "e": ends})
    order = pc.sort_indices(
        t, sort_keys=[("p", "ascending"), ("t", "ascending"), ("s", "ascending"), ("e", "descending")]
    )
    p, tt, s, e = (t[c].to_pylist() for c in ("p", "t", "s", "e"))
    parent: list[int | None] = [None] * n
    depth = [0] * n
    stack: list[int] = []
    prev: tuple[Any, Any] | None = None
    for i in order.to_pylist():
        key = (p[i], tt[i])
        if key != prev:
            stack.clear()
            prev = key
        while stack and e[stack[-1]] <= s[i]:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
            depth[i] = len(stack)
        stack.append(i)
    return parent, depth


def _ints(values: Iterable[Any]) -> list[int | None]:
    """pid/tid columns: plain ints pass straight through; strings take the slow path."""
    return [v if type(v) is int else _as_int(v) for v in values]


def _offset_ids(idx: list[int | None], base: int) -> list[int | None]:
    return [None if i is None else base + i for i in idx]


def _lookup(keys: pa.Array, value_keys: pa.Array, values: pa.Array) -> pa.Array:
    """values[position of key in value_keys] (first match), null where absent: a vectorized join."""
    if len(value_keys) == 0:
        return pa.nulls(len(keys), values.type)
    return values.take(pc.index_in(keys, value_set=value_keys))


def _raw_text(r: msgspec.Raw) -> str | None:
    if not len(r):
        return None
    s = bytes(r).decode("utf-8", "replace")
    return None if s in ("[]", "null") else s


# --------------------------------------------------------------------------------------------
# One rank file -> table columns


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


@dataclass
class Ctx:
    """Per-file conversion state shared by the table builders."""

    interner: Interner
    exact: bool
    in_ns: bool
    shift_ns: int
    counts: dict[str, int]
    next_range_id: int
    next_op_id: int

    def times(self, evs: Sequence[Event]) -> tuple[pa.Array, pa.Array]:
        start = _ns([e.ts for e in evs], self.exact, self.in_ns)
        dur = _durations([e.dur for e in evs], self.exact, self.in_ns, self.counts)
        if self.shift_ns:
            start = pc.add(start, self.shift_ns)
        return start, pc.add(start, dur)

    def names(self, evs: Sequence[Event]) -> pa.Array:
        return self.interner.intern_array(pa.array([e.name or "" for e in evs], pa.string()))


def _bucket(
    events: Iterable[Event], roles: dict[str, str], counts: dict[str, int], ts_bound: float = INT64_NS_LIMIT / 1000
) -> dict[str, list[Event]]:
    """Group events by model role. One pass, no per-event dicts.

    An X event whose ts is missing or cannot be a time (NaN, inf, 1e30: `ts_bound`) is dropped, counted.
    """
    out: dict[str, list[Event]] = {}
    get = roles.get
    for e in events:
        ph = e.ph
        if ph == "X":
            if e.ts is None or not _fits(e.ts, ts_bound):
                counts["no_ts"] = counts.get("no_ts", 0) + 1
                continue
            role = get(e.cat, "other") if e.cat is not None else "other"
        elif ph == "M":
            role = "meta"
        elif ph in ("i", "I"):
            role = "memory" if e.name == "[memory]" and e.ts is not None else "ignore"
        elif ph == "f" or ph == "t":
            role = "flow_end"
        else:
            role = "ignore"
        b = out.get(role)
        if b is None:
            b = out[role] = []
        b.append(e)
    return out


def _gpu_device(evs: Sequence[Event], args: Sequence[Args]) -> list[int | None]:
    """args.device, else the pid (old traces put the device ordinal in pid)."""
    return [a.device if a.device is not None else _as_int(e.pid) for e, a in zip(evs, args, strict=True)]


def _gpu_stream(evs: Sequence[Event], args: Sequence[Args]) -> list[int | None]:
    return [
        (a.stream if type(a.stream) is int else _as_int(a.stream)) if a.stream is not None else _as_int(e.tid)
        for e, a in zip(evs, args, strict=True)
    ]


def _ext(args: Sequence[Args]) -> list[int | None]:
    return [a.external_id if a.external_id is not None else a.external_id_old for a in args]


def _flow_correlation(evs: Sequence[Event], flows: Sequence[Event], corr: list[int | None]) -> list[int | None]:
    """Fill missing correlation ids from flow-end events (same pid, tid, ts) when args lack them."""
    if all(c is not None for c in corr) or not flows:
        return corr
    by_pos = {(f.pid, f.tid, f.ts): _as_int(f.id) for f in flows}
    return [c if c is not None else by_pos.get((e.pid, e.tid, e.ts)) for e, c in zip(evs, corr, strict=True)]


def _api_calls(ctx: Ctx, b: dict[str, list[Event]]) -> pa.Table:
    evs = b.get("runtime", []) + b.get("driver", [])
    n_rt = len(b.get("runtime", []))
    args = [e.args or NO_ARGS for e in evs]
    start, end = ctx.times(evs)
    names = pa.array([e.name or "" for e in evs], pa.string())
    cuda = pa.array(["cuda_runtime"] * n_rt + ["cuda_driver"] * (len(evs) - n_rt), pa.string())
    api = pc.if_else(pc.starts_with(names, "hip"), "hip_runtime", cuda)
    return pa.table(
        {
            "pid": pa.array(_ints([e.pid for e in evs]), pa.int64()),
            "tid": pa.array(_ints([e.tid for e in evs]), pa.int64()),
            "start_ns": start,
            "end_ns": end,
            "api": api,
            "name_id": ctx.interner.intern_array(names),
            "correlation_id": pa.array([a.correlation for a in args], pa.int64()),
            "external_id": pa.array(_ext(args), pa.int64()),
        }
    )


def _launch_info(api: pa.Table, corr: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """pid, tid, External id of the runtime call that launched each GPU activity (by correlation)."""
    keys = api["correlation_id"].combine_chunks()
    pid, tid, ext = (_lookup(corr, keys, api[c].combine_chunks()) for c in ("pid", "tid", "external_id"))
    return pid, tid, ext


def _kernels(ctx: Ctx, b: dict[str, list[Event]], api: pa.Table) -> pa.Table:
    evs = b.get("kernel", [])
    args = [e.args or NO_ARGS for e in evs]
    start, end = ctx.times(evs)
    corr = pa.array(_flow_correlation(evs, b.get("flow_end", []), [a.correlation for a in args]), pa.int64())
    pid, _, launch_ext = _launch_info(api, corr)
    ext = pc.coalesce(pa.array(_ext(args), pa.int64()), launch_ext)

    grids = [a.grid if type(a.grid) is list and len(a.grid) == 3 else NO_DIM for a in args]
    blocks = [a.block if type(a.block) is list and len(a.block) == 3 else NO_DIM for a in args]

    def dim(rows: list[Any], k: int) -> pa.Array:
        return pa.array([r[k] for r in rows], pa.int32())

    return pa.table(
        {
            "device_id": pa.array(_gpu_device(evs, args), pa.int32()),
            "stream_id": pa.array(_gpu_stream(evs, args), pa.int64()),
            "context_id": pa.array([a.context for a in args], pa.int64()),
            "pid": pid,
            "start_ns": start,
            "end_ns": end,
            "name_id": ctx.names(evs),
            "correlation_id": corr,
            "grid_x": dim(grids, 0),
            "grid_y": dim(grids, 1),
            "grid_z": dim(grids, 2),
            "block_x": dim(blocks, 0),
            "block_y": dim(blocks, 1),
            "block_z": dim(blocks, 2),
            "registers_per_thread": pa.array([a.registers for a in args], pa.int32()),
            "shared_memory_bytes": pa.array([a.shared_memory for a in args], pa.int32()),
            "external_id": ext,
        }
    )


def _memop_kinds(evs: Sequence[Event], op: str) -> tuple[list[str | None], list[str | None], list[str | None]]:
    """copy_kind, src_kind, dst_kind from names like 'Memcpy HtoD (Pageable -> Device)'."""
    m = mappings()
    copy: list[str | None] = []
    src: list[str | None] = []
    dst: list[str | None] = []
    for e in evs:
        name = e.name or ""
        if op == "memcpy":
            g = MEMCPY_RE.match(name)
            copy.append(m.copy_kinds.get(g.group(1), "unknown") if g else "unknown")
            src.append(m.memory_kinds.get(g.group(2), "unknown") if g and g.group(2) else None)
            dst.append(m.memory_kinds.get(g.group(3), "unknown") if g and g.group(3) else None)
        else:
            g = MEMSET_RE.match(name)
            copy.append(None)
            src.append(None)
            dst.append(m.memory_kinds.get(g.group(1), "unknown") if g and g.group(1) else None)
    return copy, src, dst


def _memops(ctx: Ctx, b: dict[str, list[Event]], api: pa.Table) -> pa.Table:
    parts = []
    for op in ("memcpy", "memset"):
        evs = b.get(op, [])
        args = [e.args or NO_ARGS for e in evs]
        start, end = ctx.times(evs)
        corr = pa.array(_flow_correlation(evs, b.get("flow_end", []), [a.correlation for a in args]), pa.int64())
        pid, _, launch_ext = _launch_info(api, corr)
        copy, src, dst = _memop_kinds(evs, op)
        parts.append(
            pa.table(
                {
                    "device_id": pa.array(_gpu_device(evs, args), pa.int32()),
                    "stream_id": pa.array(_gpu_stream(evs, args), pa.int64()),
                    "context_id": pa.array([a.context for a in args], pa.int64()),
                    "pid": pid,
                    "start_ns": start,
                    "end_ns": end,
                    "op": pa.array([op] * len(evs), pa.string()),
                    "copy_kind": pa.array(copy, pa.string()),
                    "src_kind": pa.array(src, pa.string()),
                    "dst_kind": pa.array(dst, pa.string()),
                    "bytes": pa.array([None if a.bytes is None else int(a.bytes) for a in args], pa.int64()),
                    "correlation_id": corr,
                    "external_id": pc.coalesce(pa.array(_ext(args), pa.int64()), launch_ext),
                }
            )
        )
    return pa.concat_tables(parts)


def _sync(ctx: Ctx, b: dict[str, list[Event]], api: pa.Table) -> pa.Table:
    """cuda_sync events sit on the GPU row; the waiting host thread comes from the runtime call."""
    evs = b.get("sync", [])
    args = [e.args or NO_ARGS for e in evs]
    start, end = ctx.times(evs)
    corr = pa.array([a.correlation for a in args], pa.int64())
    pid, tid, _ = _launch_info(api, corr)
    kinds = mappings().sync_kinds
    return pa.table(
        {
            "device_id": pa.array([a.device for a in args], pa.int32()),
            "stream_id": pa.array([_as_int(a.stream) if a.stream is not None else None for a in args], pa.int64()),
            "pid": pid,
            "tid": tid,
            "start_ns": start,
            "end_ns": end,
            "kind": pa.array(
                [kinds.get(a.sync_kind or e.name or "", "unknown") for e, a in zip(evs, args, strict=True)]
            ),
            "correlation_id": corr,
        }
    )


def _split_steps(evs: list[Event]) -> tuple[list[Event], list[Event]]:
    """ProfilerStep#N events (old traces record them as Operator) apart from the rest."""
    steps = [e for e in evs if e.name and e.name.startswith("ProfilerStep#")]
    if not steps:
        return [], evs
    return steps, [e for e in evs if not (e.name and e.name.startswith("ProfilerStep#"))]


def _step_of(name: str | None) -> int | None:
    m = STEP_RE.match(name or "")
    return int(m.group(1)) if m else None


def _ranges(ctx: Ctx, b: dict[str, list[Event]], steps: list[Event]) -> pa.Table:
    cpu = steps + b.get("user_annotation", [])
    sources = ["profiler_step"] * len(steps) + [
        "profiler_step" if _step_of(e.name) is not None else "user_annotation" for e in b.get("user_annotation", [])
    ]
    gpu = b.get("gpu_user_annotation", [])
    gargs = [e.args or NO_ARGS for e in gpu]
    evs = cpu + gpu
    start, end = ctx.times(evs)
    pids = _ints([e.pid for e in cpu]) + [None] * len(gpu)
    tids = _ints([e.tid for e in cpu]) + [None] * len(gpu)
    devices = [None] * len(cpu) + _gpu_device(gpu, gargs)
    # GPU annotations nest per (device, stream row); host ones per (pid, tid)
    nest_p = pids[: len(cpu)] + [-1 - (d or 0) for d in devices[len(cpu) :]]
    nest_t = tids[: len(cpu)] + _gpu_stream(gpu, gargs)
    parent, depth = _nest(nest_p, nest_t, start, end)
    base = ctx.next_range_id
    ctx.next_range_id += len(evs)
    return pa.table(
        {
            "range_id": pa.array(range(base, base + len(evs)), pa.int64()),
            "parent_id": pa.array(_offset_ids(parent, base), pa.int64()),
            "depth": pa.array(depth, pa.int32()),
            "source": pa.array(sources + ["gpu_user_annotation"] * len(gpu), pa.string()),
            "name_id": ctx.names(evs),
            "pid": pa.array(pids, pa.int64()),
            "tid": pa.array(tids, pa.int64()),
            "device_id": pa.array(devices, pa.int32()),
            "start_ns": start,
            "end_ns": end,
            "step": pa.array([_step_of(e.name) for e in evs], pa.int64()),
        }
    )


def _cpu_ops(ctx: Ctx, ops: list[Event], py: list[Event]) -> pa.Table:
    evs = ops + py
    args = [e.args or NO_ARGS for e in evs]
    start, end = ctx.times(evs)
    pids = _ints([e.pid for e in evs])
    tids = _ints([e.tid for e in evs])
    parent, depth = _nest(pids, tids, start, end)
    base = ctx.next_op_id
    ctx.next_op_id += len(evs)
    return pa.table(
        {
            "op_id": pa.array(range(base, base + len(evs)), pa.int64()),
            "parent_id": pa.array(_offset_ids(parent, base), pa.int64()),
            "depth": pa.array(depth, pa.int32()),
            "category": pa.array(["cpu_op"] * len(ops) + ["python_function"] * len(py), pa.string()),
            "name_id": ctx.names(evs),
            "pid": pa.array(pids, pa.int64()),
            "tid": pa.array(tids, pa.int64()),
            "start_ns": start,
            "end_ns": end,
            "external_id": pa.array(_ext(args), pa.int64()),
            "sequence_number": pa.array([a.sequence_number for a in args], pa.int64()),
            "input_shapes": pa.array(
                [_raw_text(a.input_dims if len(a.input_dims) else a.input_dims_old) for a in args], pa.string()
            ),
            "input_dtypes": pa.array([_raw_text(a.input_type) for a in args], pa.string()),
            "flop": pa.array([None if a.flops is None else float(a.flops) for a in args], pa.float64()),
        }
    )


@dataclass(frozen=True)
class CommsOp:
    ext: int
    kind: str
    bytes: int | None
    dtype: str | None
    communicator: str | None
    group_size: int | None


def _comms_ops(ops: Sequence[Event]) -> list[tuple[Event, CommsOp]]:
    """record_param_comms ops with what they say about the collective (kind, size, group)."""
    m = mappings()
    out = []
    for e in ops:
        if e.name != COMMS_OP:
            continue
        a = e.args or NO_ARGS
        kind = m.collective_kinds.get((a.collective or "").lower(), "other")
        size = m.dtype_bytes.get(a.dtype or "")
        nbytes = a.in_nelems * size if a.in_nelems is not None and size else None
        ext = a.external_id if a.external_id is not None else -1
        out.append((e, CommsOp(ext, kind, nbytes, a.dtype, a.pg_name, a.group_size)))
    return out


def _nccl_kind(name: str) -> str:
    for word, kind in mappings().nccl_kernel_kinds:
        if word in name:
            return kind
    return "other"


def _collectives(
    ctx: Ctx, rank: int | None, kernels_evs: Sequence[Event], kernels: pa.Table, comms: list[tuple[Event, CommsOp]]
) -> pa.Table:
    """One row per NCCL/RCCL kernel (source kernel) and per record_param_comms op (source cpu_op).

    A kernel takes size/dtype/group from the nearest record_param_comms whose External id is not
    after the kernel's (the comms op opens the region whose launches the kernel came from).
    """
    by_ext = sorted((c.ext, c) for _, c in comms if c.ext >= 0)
    exts = [x for x, _ in by_ext]
    idx = [i for i, e in enumerate(kernels_evs) if "nccl" in (e.name or "").lower()]
    rows: dict[str, list[Any]] = {
        k: [] for k in ("device_id", "stream_id", "kind", "bytes", "dtype", "communicator", "group_size", "source")
    }
    k_ext = kernels["external_id"].to_pylist()
    dev, stream = kernels["device_id"].to_pylist(), kernels["stream_id"].to_pylist()
    for i in idx:
        op = None
        if k_ext[i] is not None and (j := bisect.bisect_right(exts, k_ext[i])) > 0:
            op = by_ext[j - 1][1]
        kind = _nccl_kind(kernels_evs[i].name or "")
        if kind == "other" and op is not None:
            kind = op.kind
        _add_comm_row(rows, dev[i], stream[i], kind, op, "kernel")
    for _, c in comms:
        _add_comm_row(rows, None, None, c.kind, c, "cpu_op")
    take = pa.array(idx, pa.int64())
    k_start, k_end, k_name = (kernels[c].combine_chunks().take(take) for c in ("start_ns", "end_ns", "name_id"))
    c_start, c_end = ctx.times([e for e, _ in comms])
    names = pa.concat_arrays([k_name, ctx.names([e for e, _ in comms])])
    n = len(rows["kind"])
    return pa.table(
        {
            "device_id": pa.array(rows["device_id"], pa.int32()),
            "rank": pa.array([rank] * n, pa.int32()),
            "stream_id": pa.array(rows["stream_id"], pa.int64()),
            "start_ns": pa.concat_arrays([k_start, c_start]),
            "end_ns": pa.concat_arrays([k_end, c_end]),
            "kind": pa.array(rows["kind"], pa.string()),
            "bytes": pa.array(rows["bytes"], pa.int64()),
            "dtype": pa.array(rows["dtype"], pa.string()),
            "communicator": pa.array(rows["communicator"], pa.string()),
            "group_size": pa.array(rows["group_size"], pa.int32()),
            "name_id": names,
            "source": pa.array(rows["source"], pa.string()),
        }
    )


def _add_comm_row(rows: dict[str, list[Any]], dev: Any, stream: Any, kind: str, op: CommsOp | None, src: str) -> None:
    rows["device_id"].append(dev)
    rows["stream_id"].append(stream)
    rows["kind"].append(kind)
    rows["bytes"].append(op.bytes if op else None)
    rows["dtype"].append(op.dtype if op else None)
    rows["communicator"].append(op.communicator if op else None)
    rows["group_size"].append(op.group_size if op else None)
    rows["source"].append(src)


GPU_DEVICE_TYPES = (1, 6)  # c10::DeviceType CUDA, HIP (ROCm builds usually report CUDA)


def _memory_events(ctx: Ctx, evs: Sequence[Event]) -> pa.Table:
    args = [e.args or NO_ARGS for e in evs]
    ts = _ns([e.ts for e in evs], ctx.exact, ctx.in_ns)
    if ctx.shift_ns:
        ts = pc.add(ts, ctx.shift_ns)
    dev = [
        a.mem_device_id if a.mem_device_type in GPU_DEVICE_TYPES and (a.mem_device_id or 0) >= 0 else None for a in args
    ]
    return pa.table(
        {
            "device_id": pa.array(dev, pa.int32()),
            "pid": pa.array(_ints([e.pid for e in evs]), pa.int64()),
            "tid": pa.array(_ints([e.tid for e in evs]), pa.int64()),
            "timestamp_ns": ts,
            "bytes_delta": pa.array([a.mem_bytes for a in args], pa.int64()),
            "total_allocated_bytes": pa.array([a.total_allocated for a in args], pa.int64()),
            "total_reserved_bytes": pa.array([a.total_reserved for a in args], pa.int64()),
            "address": pa.array([a.addr if a.addr is None or a.addr < 2**63 else None for a in args], pa.int64()),
        }
    )


def _threads(evs: Sequence[Event]) -> pa.Table:
    procs: dict[int, str | None] = {}
    threads: dict[tuple[int, int], str | None] = {}
    for e in evs:
        pid = _as_int(e.pid)
        if pid is None:
            continue
        label = (e.args or NO_ARGS).label
        if e.name == "process_name":
            procs[pid] = label
        elif e.name == "thread_name" and (tid := _as_int(e.tid)) is not None:
            threads[(pid, tid)] = label
    rows: list[tuple[int, int | None, str | None, str | None]]
    rows = [(p, t, procs.get(p), name) for (p, t), name in threads.items()]
    rows += [(p, None, name, None) for p, name in procs.items() if not any(k[0] == p for k in threads)]
    return pa.table(
        {
            "pid": pa.array([r[0] for r in rows], pa.int64()),
            "tid": pa.array([r[1] for r in rows], pa.int64()),
            "process_name": pa.array([r[2] for r in rows], pa.string()),
            "thread_name": pa.array([r[3] for r in rows], pa.string()),
        }
    )


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


def _captured(b: dict[str, list[Event]], gpu: bool) -> set[str]:
    cap = set()
    if gpu:
        cap |= {"kernels", "memops", "collectives", "devices"}
    if b.get("runtime") or b.get("driver"):
        cap.add("api_calls")
    if b.get("cpu_op") or b.get("python_function"):
        cap |= {"cpu_ops", "ranges", "collectives"}
    if b.get("user_annotation") or b.get("gpu_user_annotation"):
        cap.add("ranges")
    if b.get("sync"):
        cap.add("sync")
    if b.get("memory"):
        cap.add("memory_events")
    if b.get("meta"):
        cap.add("threads")
    return cap


def convert_file(
    path: Path, options: ParseOptions, interner: Interner, ids: tuple[int, int], base_ns: int | None
) -> FileParts:
    """Decode one rank file and build its tables. `base_ns`: the run's clock origin (directories)."""
    counts: dict[str, int] = {}
    buf = _read_json_bytes(path, options.max_json_bytes)
    mode, in_ns = _sniff(buf)
    doc = _decode(path, buf, mode, counts)
    del buf  # the text is no longer needed; only the decoded structs stay alive
    bucket = _bucket(doc.traceEvents, mappings().roles, counts, INT64_NS_LIMIT if in_ns else INT64_NS_LIMIT / 1000)
    doc.traceEvents = []
    own_base = doc.baseTimeNanoseconds if isinstance(doc.baseTimeNanoseconds, int) else None
    shift = own_base - base_ns if base_ns is not None and own_base is not None else 0
    ctx = Ctx(interner, mode == "exact", in_ns, shift, counts, *ids)
    steps, ops = _split_steps(bucket.get("cpu_op", []))
    tables = _build_tables(ctx, bucket, steps, ops, _dist(doc).rank)
    _align_memory_devices(tables, counts)
    props = _device_props(doc)
    seen = _devices_seen(tables)
    dist = _dist(doc)
    api_names = (e.name or "" for e in bucket.get("runtime", [])[:50])
    return FileParts(
        rank=dist.rank,
        world_size=dist.world_size,
        tables=tables,
        devices_seen=seen,
        device_props=props,
        vendor=_vendor(doc, props, api_names),
        header=_header(doc, "ns" if in_ns else "us") | {"next_ids": (ctx.next_range_id, ctx.next_op_id)},
        captured=_captured(bucket, bool(bucket.get("kernel") or bucket.get("memcpy") or bucket.get("memset"))),
        counts=counts,
    )


def _build_tables(
    ctx: Ctx, b: dict[str, list[Event]], steps: list[Event], ops: list[Event], rank: int | None
) -> dict[str, pa.Table]:
    api = _api_calls(ctx, b)
    kernels = _kernels(ctx, b, api)
    comms = _comms_ops(ops)
    return {
        "api_calls": api,
        "kernels": kernels,
        "memops": _memops(ctx, b, api),
        "sync": _sync(ctx, b, api),
        "ranges": _ranges(ctx, b, steps),
        "cpu_ops": _cpu_ops(ctx, ops, b.get("python_function", [])),
        "collectives": _collectives(ctx, rank, b.get("kernel", []), kernels, comms),
        "memory_events": _memory_events(ctx, b.get("memory", [])),
        "threads": _threads(b.get("meta", [])),
    }


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
    col = _lookup(mem_t["device_id"].combine_chunks(), keys, vals)
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
        raise InputError(f"{path}: directory holds no Kineto trace files (*.json / *.json.gz with traceEvents)",
                         "pass a trace file, or a directory of rank traces")
    return traces


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
    """(file index, local ordinal) -> run-unique device_id.

    The local ordinal is kept when it is already unique across the run (one file, or ranks that
    each use a different GPU), so `device 3` still means cuda:3; otherwise devices are numbered in
    rank order.
    """
    pairs = [(i, d) for i, p in enumerate(parts) for d in sorted(p.devices_seen)]
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
    return t.set_column(i, "device_id", _lookup(t["device_id"].combine_chunks(), keys, vals))


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


def parse(path: Path, options: ParseOptions) -> ParsedRun:
    """Parse a Kineto trace file, or a directory of rank files, into one run."""
    path = Path(path)
    files = rank_files(path)
    base = _base_ns(files, options.max_json_bytes) if len(files) > 1 else None
    interner = Interner()
    parts: list[FileParts] = []
    ids = (0, 0)
    for n, f in enumerate(files):
        options.progress(n, len(files), f"kineto {f.name}")
        part = convert_file(f, options, interner, ids, base)
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
    return ParsedRun(tables=out, run=_run_row(parts, files, base), captured=captured, notes=_notes(parts, files))


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
