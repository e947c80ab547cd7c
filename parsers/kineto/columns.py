"""Decoded event slices -> per-kind column arrays, appended slice by slice.

`FileColumns.add` takes one slice of events, a cache-sized batch at a time, sorts them by model
role (`bucket`), turns each role's events into Arrow arrays (times in ns, names dictionary-encoded,
only the args that role uses) and drops the structs. Nothing per event outlives its slice:
cross-category work (kernel -> launch, nesting, flows, collectives) runs on the finished columns in
`tables`.

What is left per event is one list comprehension per field (a Python object per field is what
msgspec gives); the rest is one Arrow or numpy call per batch and column, each with a value-by-value
fallback of the same meaning for the odd value (a string pid, an int past int64, a Decimal time).

Times are kept as start and cleaned duration without the run's clock shift: a directory's shift is
known only once the file's header (after `traceEvents`) has been read.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from advisor.parsers.kineto.decode import NO_ARGS, Args, Event
from advisor.parsers.kineto.mapping import mappings

MAX_EVENT_DURATION_NS = 24 * 3600 * 10**9  # longer is a corrupted record, never a real event (docs/limits.md)
INT64_NS_LIMIT = 9.2e18  # |time| in ns that still fits int64 (about 292 years)
FLOAT_EXACT = float(2**53)  # every int up to this is exact in a float64
STEP_RE = re.compile(r"ProfilerStep#(\d+)$")
MEMCPY_RE = re.compile(r"Memcpy (\w+)(?: \((\w+) -> (\w+)\))?")
MEMSET_RE = re.compile(r"Memset(?: \((\w+)\))?")
COMMS_OP = "record_param_comms"
GPU_DEVICE_TYPES = (1, 6)  # c10::DeviceType CUDA, HIP (ROCm builds usually report CUDA)
NO_DIM = (None, None, None)
NAME_TYPE = pa.dictionary(pa.int32(), pa.string())
BATCH_EVENTS = 4096  # events columnized at once: their structs stay in the CPU cache (see FileColumns.add)
I64, I32, F64, STR = pa.int64(), pa.int32(), pa.float64(), pa.string()

_X = {"start": I64, "dur": I64}
_GPU = {"device": I32, "stream": I64, "context": I64, **_X, "correlation": I64, "external_id": I64}
_OPS = {
    "pid": I64,
    "tid": I64,
    **_X,
    "name": NAME_TYPE,
    "external_id": I64,
    "sequence_number": I64,
    "input_shapes": STR,
    "input_dtypes": STR,
    "input_strides": STR,
    "concrete_inputs": STR,
    "flop": F64,
}
_HOST_RANGE = {"pid": I64, "tid": I64, **_X, "name": NAME_TYPE, "step": I64}
_MEMOP = {**_GPU, "copy_kind": STR, "src_kind": STR, "dst_kind": STR, "bytes": I64}
# kind -> column types (kinds are roles, with cpu_op split into ProfilerStep# `step` and the rest)
KINDS: dict[str, dict[str, pa.DataType]] = {
    "runtime": {"pid": I64, "tid": I64, **_X, "name": NAME_TYPE, "correlation": I64, "external_id": I64},
    "kernel": {
        **_GPU,
        "name": NAME_TYPE,
        "grid_x": I32,
        "grid_y": I32,
        "grid_z": I32,
        "block_x": I32,
        "block_y": I32,
        "block_z": I32,
        "registers": I32,
        "shared_memory": I32,
    },
    "memcpy": _MEMOP,
    "memset": _MEMOP,
    "sync": {"device": I32, "stream": I64, **_X, "kind": STR, "correlation": I64},
    "step": _HOST_RANGE,
    "user_annotation": _HOST_RANGE,
    "gpu_user_annotation": {"device": I32, "stream": I64, **_X, "name": NAME_TYPE, "step": I64},
    "cpu_op": _OPS,
    "python_function": _OPS,
    "memory": {
        "device": I32,
        "pid": I64,
        "tid": I64,
        "ts": I64,
        "bytes_delta": I64,
        "total_allocated": I64,
        "total_reserved": I64,
        "address": I64,
    },
    "flow": {"pid": I64, "tid": I64, "ts": F64, "id": I64},
}
KINDS["driver"] = KINDS["runtime"]


# --------------------------------------------------------------------------------------------
# Small helpers


def wrap64(v: int) -> int | None:
    """An id as a signed 64-bit value: unsigned 64-bit ids (thread ids, correlation and External ids some
    profilers write past 2^63) keep their identity as the two's complement; wider values are damage."""
    if -(2**63) <= v < 2**63:
        return v
    return v - 2**64 if 2**63 <= v < 2**64 else None


def as_int(v: Any) -> int | None:
    """pid/tid/stream/id values: ints, numeric strings, or 'stream 7' (old GPU rows), as signed 64-bit (wrap64)."""
    if isinstance(v, int):
        return wrap64(v)
    if isinstance(v, str):
        s = v.rsplit(" ", 1)[-1]
        if s.lstrip("-").isdigit():
            return wrap64(int(s))
    return None


def fits(v: Any, bound: float) -> bool:
    """A finite number under `bound` in magnitude (NaN, inf and 1e300 are not times, just damage)."""
    try:
        return v is not None and bool(abs(v) < bound)
    except (TypeError, ArithmeticError):
        return False


def ns(values: Sequence[Any], exact: bool, in_ns: bool) -> pa.Array:
    """Trace times -> int64 ns. Floats are split into whole + fraction so ns digits survive.

    Values that cannot be an int64 ns time (non-finite, or past about 292 years) become null.
    """
    if not exact and not in_ns and (small := _small_us_to_ns(values)) is not None:
        return pa.array(small[0], mask=small[1])
    bound = INT64_NS_LIMIT if in_ns else INT64_NS_LIMIT / 1000
    values = [v if fits(v, bound) else None for v in values]
    if exact:
        return pa.array([None if v is None else round(v.scaleb(3)) for v in values], pa.int64())
    if in_ns:
        return pa.array([None if v is None else round(v) for v in values], pa.int64())
    return _us_to_ns(pa.array(values, pa.float64()))


def _small_us_to_ns(values: Sequence[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_] | None] | None:
    """Microsecond times -> (int64 ns, null mask or None) when every value is under 2**53 in
    magnitude, else None (the caller then checks value by value).

    Such a value is exact in float64 and far inside the int64-ns bound, so this is what the
    per-value path in `ns` gives (`_us_to_ns`: the same float64 floor, subtract, multiply, round
    half to even and exact casts), in numpy: a batch of a few thousand values would otherwise pay
    ~10 us per Arrow compute call. None and NaN (not a time) both come out null.
    """
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    if arr.ndim != 1 or np.any(np.abs(arr) >= FLOAT_EXACT):  # NaN compares False: it becomes null below
        return None
    nan = np.isnan(arr)
    mask = None
    if nan.any():
        mask = nan
        arr = np.where(nan, 0.0, arr)
    whole = np.floor(arr)
    frac = np.round((arr - whole) * 1000.0)
    return whole.astype(np.int64) * 1000 + frac.astype(np.int64), mask


def _us_to_ns(arr: pa.Array) -> pa.Array:
    whole = pc.floor(arr)
    frac = pc.round(pc.multiply(pc.subtract(arr, whole), 1000.0))
    return pc.add(pc.multiply(pc.cast(whole, pa.int64()), 1000), pc.cast(frac, pa.int64()))


def durations(values: Sequence[Any], exact: bool, in_ns: bool, counts: dict[str, int]) -> pa.Array:
    """dur -> ns; missing, negative and impossible (over MAX_EVENT_DURATION_NS) become 0, all counted.

    Why a cap: CUPTI has written kernel durations of centuries (a corrupted record); one such event
    stretched the capture span to 31 years and hid every finding. Zero keeps the event's start and its
    place in the nesting; the count goes to the run's notes (`cleaned_impossible_dur`).
    """
    if not exact and not in_ns and (small := _small_us_to_ns(values)) is not None:
        return _clean_durations(*small, counts)
    if exact:
        values = [None if v is None else decimal.Decimal(v) for v in values]
    dur = ns(values, exact, in_ns)
    missing = dur.null_count
    filled = pc.fill_null(dur, 0)
    negative = int(pc.sum(pc.less(filled, 0)).as_py() or 0)
    huge = int(pc.sum(pc.greater(filled, MAX_EVENT_DURATION_NS)).as_py() or 0)
    for key, n in (("missing_dur", missing), ("negative_dur", negative), ("impossible_dur", huge)):
        if n:
            counts[key] = counts.get(key, 0) + n
    if missing or negative or huge:
        bad = pc.or_(pc.less(filled, 0), pc.greater(filled, MAX_EVENT_DURATION_NS))
        dur = pc.if_else(bad, 0, filled)
    return dur


def _clean_durations(
    dur: npt.NDArray[np.int64], missing: npt.NDArray[np.bool_] | None, counts: dict[str, int]
) -> pa.Array:
    """`durations` of `_small_us_to_ns` output (missing rows hold 0 there already)."""
    n_missing = int(missing.sum()) if missing is not None else 0
    negative = dur < 0
    huge = dur > MAX_EVENT_DURATION_NS
    n_negative, n_huge = int(negative.sum()), int(huge.sum())
    for key, n in (("missing_dur", n_missing), ("negative_dur", n_negative), ("impossible_dur", n_huge)):
        if n:
            counts[key] = counts.get(key, 0) + n
    if n_negative or n_huge:
        dur = np.where(negative | huge, 0, dur)
    return pa.array(dur)


def _ints(values: Sequence[Any]) -> list[int | None]:
    """pid/tid/id columns: plain ints in the signed 64-bit range pass straight through; strings and ids past 2^63
    (wrap64) take the slow path."""
    return [v if type(v) is int and -(2**63) <= v < 2**63 else as_int(v) for v in values]


def int_column(values: Sequence[Any], typ: pa.DataType = I64) -> pa.Array:
    """`_ints` of the values as an Arrow column (pids, tids, streams, correlation, External and sequence ids): one
    conversion when every value is a signed 64-bit int or None (what `_ints` passes through unchanged), value by
    value otherwise."""
    try:
        return pa.array(values, typ)
    except (pa.ArrowException, TypeError, OverflowError):
        return pa.array(_ints(values), typ)


def _ext(args: Sequence[Args]) -> list[int | None]:
    return [a.external_id if a.external_id is not None else a.external_id_old for a in args]


def _gpu_device(evs: Sequence[Event], args: Sequence[Args]) -> list[int | None]:
    """args.device, else the pid (old traces put the device ordinal in pid)."""
    return [a.device if a.device is not None else as_int(e.pid) for e, a in zip(evs, args, strict=True)]


def _gpu_stream(evs: Sequence[Event], args: Sequence[Args]) -> list[int | None]:
    return [
        (a.stream if type(a.stream) is int else as_int(a.stream)) if a.stream is not None else as_int(e.tid)
        for e, a in zip(evs, args, strict=True)
    ]


def _dims(values: Sequence[Any]) -> list[pa.Array]:
    """x, y, z columns of kernel grid/block values: a list of three ints, else null (Triton cpu ops
    write strings like "grid(100,)"). One conversion to a list column; value by value when that fails."""
    try:
        arr = pa.array(values, pa.list_(I32))
    except (pa.ArrowException, TypeError, OverflowError):  # a string, or an int past int32 (maybe in a list of 2)
        rows = [v if type(v) is list and len(v) == 3 else NO_DIM for v in values]
        return [pa.array([r[k] for r in rows], I32) for k in range(3)]
    offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    three = valid & (offsets[1:] - offsets[:-1] == 3)
    items = arr.values
    return [items.take(pa.array(offsets[:-1] + k, mask=~three)) for k in range(3)]


def _raw_text(r: Any) -> str | None:
    if not len(r):
        return None
    s = bytes(r).decode("utf-8", "replace")
    return None if s in ("[]", "null") else s


def _input_dims(args: Sequence[Args]) -> list[Any]:
    """`Input Dims`, or `Input dims` (older traces) where the first is absent."""
    dims = [a.input_dims for a in args]
    lens = list(map(len, dims))
    if 0 in lens:
        for i, n in enumerate(lens):
            if not n:
                dims[i] = args[i].input_dims_old
    return dims


def _floats(values: Sequence[Any]) -> pa.Array:
    """float(v) of ints and floats, None kept: one conversion (Arrow turns an int64 into the same double)."""
    try:
        return pa.array(values, F64)
    except (pa.ArrowException, TypeError, OverflowError):  # an int past int64
        return pa.array([None if v is None else float(v) for v in values], F64)


def _raw_texts(raws: Sequence[Any]) -> pa.Array:
    """`_raw_text` of every value, as one string column: the texts joined into one buffer and cast
    once (no bytes object or decode per value); an empty Raw (key absent) is null."""
    lens = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    offsets = np.zeros(len(raws) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    if offsets[-1] >= 2**31:  # past a string column's int32 offsets: value by value
        binary = pa.array([bytes(r) if len(r) else None for r in raws], pa.binary())
    else:
        valid = lens > 0
        binary = pa.Array.from_buffers(
            pa.binary(),
            len(raws),
            [pa.array(valid).buffers()[1], pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(raws))],
            null_count=int(len(raws) - valid.sum()),
        )
    try:
        arr = binary.cast(STR)
    except pa.ArrowInvalid:  # not valid UTF-8 somewhere: decode with replacement, value by value
        return pa.array([_raw_text(r) for r in raws], STR)
    empty = pc.is_in(arr, value_set=pa.array(["[]", "null"], STR))
    if not pc.any(empty).as_py():
        return arr
    return pc.if_else(empty, pa.scalar(None, STR), arr)


def step_of(name: str | None) -> int | None:
    m = STEP_RE.match(name or "")
    return int(m.group(1)) if m else None


def per_name(names: pa.DictionaryArray, fn: Any, typ: pa.DataType) -> pa.Array:
    """fn(name) for every row, computed once per distinct name (names are dictionary-encoded)."""
    values = pa.array([fn(v) for v in names.dictionary.to_pylist()], typ)
    return values.take(names.indices)


def _memop_kinds(name: str, op: str) -> tuple[str | None, str | None, str | None]:
    """copy_kind, src_kind, dst_kind from names like 'Memcpy HtoD (Pageable -> Device)'."""
    m = mappings()
    if op == "memcpy":
        g = MEMCPY_RE.match(name)
        return (
            m.copy_kinds.get(g.group(1), "unknown") if g else "unknown",
            m.memory_kinds.get(g.group(2), "unknown") if g and g.group(2) else None,
            m.memory_kinds.get(g.group(3), "unknown") if g and g.group(3) else None,
        )
    s = MEMSET_RE.match(name)
    return None, None, m.memory_kinds.get(s.group(1), "unknown") if s and s.group(1) else None


def bucket(
    events: Iterable[Event], roles: dict[str, str], counts: dict[str, int], ts_bound: float = INT64_NS_LIMIT / 1000
) -> dict[str, list[Event]]:
    """Group events by model role. One pass, no per-event dicts.

    An X event whose ts is missing or cannot be a time (NaN, inf, 1e30: `ts_bound`) is dropped, counted.
    """
    out: dict[str, list[Event]] = {}
    by_cat: dict[str | None, list[Event]] = {}  # X events: category -> its role's list (one lookup per event)
    lo, hi = -ts_bound, ts_bound
    no_ts = 0
    for e in events:
        ph = e.ph
        if ph == "X":
            t = e.ts
            if type(t) is float or type(t) is int:  # the common case, same test as `fits`
                if not lo < t < hi:
                    no_ts += 1
                    continue
            elif t is None or not fits(t, ts_bound):
                no_ts += 1
                continue
            dest = by_cat.get(e.cat)
            if dest is None:
                cat = e.cat
                dest = by_cat[cat] = out.setdefault(roles.get(cat, "other") if cat is not None else "other", [])
            dest.append(e)
            continue
        if ph == "M":
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
    if no_ts:
        counts["no_ts"] = counts.get("no_ts", 0) + no_ts
    return out


def _simple_key(pid: Any, tid: Any, ts: Any) -> bool:
    """A flow position that a float64 column matches exactly as Python's == does (ints and finite floats)."""
    if not (type(pid) is int and type(tid) is int and -(2**63) <= pid < 2**63 and -(2**63) <= tid < 2**63):
        return False
    if type(ts) is float:
        return ts == ts
    return type(ts) is int and -(2**63) <= ts < 2**63 and float(ts) == ts


def _simple_flows(evs: Sequence[Event]) -> dict[str, pa.Array] | None:
    """Flow columns when every position is simple (`_simple_key`), built without a call per event."""
    try:
        pid = pa.array([e.pid for e in evs], I64)
        tid = pa.array([e.tid for e in evs], I64)
        ts = pa.array([e.ts for e in evs], F64)
    except (pa.ArrowException, TypeError, OverflowError):
        return None
    if pid.null_count or tid.null_count or ts.null_count:
        return None
    if not pc.all(pc.less(pc.abs(ts), FLOAT_EXACT)).as_py():  # NaN, or an int a float64 may round
        return None
    ids = [e.id for e in evs]
    try:
        id_arr = pa.array(ids, I64)
    except (pa.ArrowException, TypeError, OverflowError):
        id_arr = pa.array([as_int(i) for i in ids], I64)
    return {"pid": pid, "tid": tid, "ts": ts, "id": id_arr}


@dataclass(frozen=True)
class CommsOp:
    ext: int
    kind: str
    bytes: int | None
    dtype: str | None
    communicator: str | None
    group_size: int | None


def _comms_op(e: Event) -> CommsOp:
    """What a record_param_comms op says about its collective (kind, size, group)."""
    m = mappings()
    a = e.args or NO_ARGS
    kind = m.collective_kinds.get((a.collective or "").lower(), "other")
    size = m.dtype_bytes.get(a.dtype or "")
    nbytes = a.in_nelems * size if a.in_nelems is not None and size else None
    ext = a.external_id if a.external_id is not None else -1
    return CommsOp(ext, kind, nbytes, a.dtype, a.pg_name, a.group_size)


# --------------------------------------------------------------------------------------------
# One rank file's columns


def add_counts(into: dict[str, int], more: dict[str, int]) -> None:
    """Add `more`'s counts into `into`, keys new to it after its own (first-seen order)."""
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


@dataclass
class FileColumns:
    """Columns of one rank file, filled slice by slice; see the module docstring."""

    exact: bool
    in_ns: bool
    counts: dict[str, int] = field(default_factory=dict)  # decode and bucketing notes, in order seen
    dur_counts: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> missing/negative durations
    parts: dict[str, list[dict[str, pa.Array]]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    roles_seen: set[str] = field(default_factory=set)
    comms: list[tuple[int, CommsOp]] = field(default_factory=list)  # (cpu_op row, what it says)
    procs: dict[int, str | None] = field(default_factory=dict)
    threads: dict[tuple[int, int], str | None] = field(default_factory=dict)
    runtime_names: list[str] = field(default_factory=list)  # the first few, for the vendor guess
    flow_side: dict[tuple[Any, Any, Any], int | None] = field(default_factory=dict)  # odd flow positions
    need_flow: list[tuple[str, int, tuple[Any, Any, Any]]] = field(default_factory=list)
    _combined: dict[tuple[str, str], pa.Array] = field(default_factory=dict)  # (kind, column) -> whole column

    @property
    def ts_bound(self) -> float:
        return INT64_NS_LIMIT if self.in_ns else INT64_NS_LIMIT / 1000

    def add(self, events: Sequence[Event]) -> None:
        """Take one slice of events; nothing of it is kept but columns.

        The slice is taken BATCH_EVENTS at a time. Moving a field out of the structs costs a
        memory fetch per struct; a batch's structs (about 1.5 MB) stay in the CPU cache across the
        dozen passes over them, a 16 MB slice's (~30 MB) do not: 30% less time than whole slices.
        Every step is row-wise, so the columns do not depend on where batches are cut.
        """
        for i in range(0, len(events), BATCH_EVENTS):
            self._add_batch(events[i : i + BATCH_EVENTS])

    def _add_batch(self, events: Sequence[Event]) -> None:
        b = bucket(events, mappings().roles, self.counts, self.ts_bound)
        self.roles_seen.update(r for r, evs in b.items() if evs)
        for role in ("runtime", "driver"):
            if evs := b.get(role):
                self._push(role, self._api(role, evs))
        for role in ("kernel", "memcpy", "memset"):
            if evs := b.get(role):
                self._gpu(role, evs)
        if evs := b.get("sync"):
            self._push("sync", self._sync(evs))
        if evs := b.get("cpu_op"):
            names = self._names(evs)
            if any(s.startswith("ProfilerStep#") for s in names.dictionary.to_pylist()):
                # ProfilerStep# ops are ranges; the rest keep a dictionary of their own
                step = per_name(names, lambda s: s.startswith("ProfilerStep#"), pa.bool_())
                is_step = np.asarray(step.to_numpy(zero_copy_only=False), dtype=np.bool_)
                self._push("step", self._host_range("step", [evs[i] for i in np.flatnonzero(is_step).tolist()]))
                evs = [evs[i] for i in np.flatnonzero(~is_step).tolist()]
                names = self._names(evs)
            self._ops("cpu_op", evs, names)
        if evs := b.get("python_function"):
            self._ops("python_function", evs)
        if evs := b.get("user_annotation"):
            self._push("user_annotation", self._host_range("user_annotation", evs))
        if evs := b.get("gpu_user_annotation"):
            self._push("gpu_user_annotation", self._gpu_range(evs))
        if evs := b.get("memory"):
            self._push("memory", self._memory(evs))
        if evs := b.get("flow_end"):
            self._flows(evs)
        if evs := b.get("meta"):
            self._meta(evs)
        if len(self.runtime_names) < 50:
            self.runtime_names += [e.name or "" for e in b.get("runtime", [])[: 50 - len(self.runtime_names)]]

    def absorb(self, later: FileColumns) -> None:
        """Append the columns of the text right after this one's (the parallel reader's merge): the
        result is what one FileColumns fed both texts in order holds. Row numbers kept by `later`
        (comms ops, GPU rows waiting for a flow) are shifted by this one's row counts."""
        self.comms += [(self.n("cpu_op") + row, op) for row, op in later.comms]
        self.need_flow += [(kind, self.n(kind) + row, key) for kind, row, key in later.need_flow]
        for kind, parts in later.parts.items():
            self.parts.setdefault(kind, []).extend(parts)
        for kind, n in later.rows.items():
            self.rows[kind] = self.n(kind) + n
        add_counts(self.counts, later.counts)
        for kind, c in later.dur_counts.items():
            add_counts(self.dur_counts.setdefault(kind, {}), c)
        self.roles_seen |= later.roles_seen
        self.procs.update(later.procs)
        self.threads.update(later.threads)
        self.runtime_names = (self.runtime_names + later.runtime_names)[:50]
        self.flow_side.update(later.flow_side)

    def column(self, kind: str, name: str) -> pa.Array:
        """The whole file's column (names stay dictionary-encoded, dictionaries unified in row order).

        The slices' arrays are dropped once combined, so a column is never held twice.
        """
        done = self._combined.get((kind, name))
        if done is not None:
            return done
        typ = KINDS[kind][name]
        chunks = [p.pop(name) for p in self.parts.get(kind, [])]
        if typ == NAME_TYPE:
            unified = pa.chunked_array(chunks, typ).unify_dictionaries()
            dictionary = unified.chunk(0).dictionary if unified.num_chunks else pa.array([], STR)
            indices = pa.chunked_array([c.indices for c in unified.chunks], pa.int32()).combine_chunks()
            out: pa.Array = pa.DictionaryArray.from_arrays(indices, dictionary)
        else:
            out = pa.chunked_array(chunks, typ).combine_chunks()
        self._combined[(kind, name)] = out
        return out

    def release(self, *kinds: str) -> None:
        """Drop the kinds' columns once their table is built (the table keeps what it uses)."""
        for kind in kinds:
            self.parts.pop(kind, None)
            for key in [k for k in self._combined if k[0] == kind]:
                del self._combined[key]

    def n(self, kind: str) -> int:
        return self.rows.get(kind, 0)

    # -- per role ------------------------------------------------------------------------

    def _push(self, kind: str, cols: dict[str, pa.Array]) -> None:
        self.parts.setdefault(kind, []).append(cols)
        self.rows[kind] = self.rows.get(kind, 0) + len(cols["start" if "start" in cols else "ts"])

    def _x(self, kind: str, evs: Sequence[Event]) -> dict[str, pa.Array]:
        counts = self.dur_counts.setdefault(kind, {})
        return {
            "start": ns([e.ts for e in evs], self.exact, self.in_ns),
            "dur": durations([e.dur for e in evs], self.exact, self.in_ns, counts),
        }

    def _names(self, evs: Sequence[Event]) -> pa.DictionaryArray:
        names = [e.name for e in evs]
        out = pa.array(names, NAME_TYPE)  # dictionary in first-seen order, as dictionary_encode builds it
        if out.null_count:  # a missing name is the empty string
            out = pa.array([n or "" for n in names], STR).dictionary_encode()
        return out

    def _api(self, kind: str, evs: Sequence[Event]) -> dict[str, pa.Array]:
        args = [e.args or NO_ARGS for e in evs]
        return {
            "pid": int_column([e.pid for e in evs]),
            "tid": int_column([e.tid for e in evs]),
            **self._x(kind, evs),
            "name": self._names(evs),
            "correlation": int_column([a.correlation for a in args]),
            "external_id": int_column(_ext(args)),
        }

    def _gpu(self, kind: str, evs: Sequence[Event]) -> None:
        args = [e.args or NO_ARGS for e in evs]
        corr = [a.correlation for a in args]
        base = self.n(kind)
        if None in corr:
            self.need_flow += [(kind, base + i, (e.pid, e.tid, e.ts)) for i, e in enumerate(evs) if corr[i] is None]
        cols = {
            "device": pa.array(_gpu_device(evs, args), I32),
            "stream": int_column(_gpu_stream(evs, args)),
            "context": int_column([a.context for a in args]),
            **self._x(kind, evs),
            "correlation": int_column(corr),
            "external_id": int_column(_ext(args)),
        }
        names = self._names(evs)
        if kind == "kernel":
            cols["name"] = names
            grid, block = _dims([a.grid for a in args]), _dims([a.block for a in args])
            for k, axis in enumerate("xyz"):
                cols[f"grid_{axis}"] = grid[k]
                cols[f"block_{axis}"] = block[k]
            cols["registers"] = pa.array([a.registers for a in args], I32)
            cols["shared_memory"] = pa.array([a.shared_memory for a in args], I32)
        else:
            for k, col in enumerate(("copy_kind", "src_kind", "dst_kind")):
                cols[col] = per_name(names, lambda s, k=k: _memop_kinds(s, kind)[k], STR)
            cols["bytes"] = pa.array([None if a.bytes is None else int(a.bytes) for a in args], I64)
        self._push(kind, cols)

    def _sync(self, evs: Sequence[Event]) -> dict[str, pa.Array]:
        """cuda_sync events sit on the GPU row; the waiting host thread comes from the runtime call."""
        args = [e.args or NO_ARGS for e in evs]
        kinds = mappings().sync_kinds
        return {
            "device": pa.array([a.device for a in args], I32),
            "stream": int_column([as_int(a.stream) if a.stream is not None else None for a in args]),
            **self._x("sync", evs),
            "kind": pa.array(
                [kinds.get(a.sync_kind or e.name or "", "unknown") for e, a in zip(evs, args, strict=True)], STR
            ),
            "correlation": int_column([a.correlation for a in args]),
        }

    def _host_range(self, kind: str, evs: Sequence[Event]) -> dict[str, pa.Array]:
        names = self._names(evs)
        return {
            "pid": int_column([e.pid for e in evs]),
            "tid": int_column([e.tid for e in evs]),
            **self._x(kind, evs),
            "name": names,
            "step": per_name(names, step_of, I64),
        }

    def _gpu_range(self, evs: Sequence[Event]) -> dict[str, pa.Array]:
        args = [e.args or NO_ARGS for e in evs]
        names = self._names(evs)
        return {
            "device": pa.array(_gpu_device(evs, args), I32),
            "stream": int_column(_gpu_stream(evs, args)),
            **self._x("gpu_user_annotation", evs),
            "name": names,
            "step": per_name(names, step_of, I64),
        }

    def _ops(self, kind: str, evs: Sequence[Event], names: pa.DictionaryArray | None = None) -> None:
        if not evs:
            return
        args = [e.args or NO_ARGS for e in evs]
        names = self._names(evs) if names is None else names
        distinct = names.dictionary.to_pylist()
        if kind == "cpu_op" and COMMS_OP in distinct:
            code = distinct.index(COMMS_OP)
            at = np.flatnonzero(np.asarray(names.indices.to_numpy(zero_copy_only=False)) == code).tolist()
            comms = [(i, evs[i]) for i in at]
            if comms:
                base = self.n(kind)
                self.comms += [(base + i, _comms_op(e)) for i, e in comms]
                counts = self.dur_counts.setdefault("comms", {})
                durations([e.dur for _, e in comms], self.exact, self.in_ns, counts)
        self._push(
            kind,
            {
                "pid": int_column([e.pid for e in evs]),
                "tid": int_column([e.tid for e in evs]),
                **self._x(kind, evs),
                "name": names,
                "external_id": int_column(_ext(args)),
                "sequence_number": int_column([a.sequence_number for a in args]),
                "input_shapes": _raw_texts(_input_dims(args)),
                "input_dtypes": _raw_texts([a.input_type for a in args]),
                "input_strides": _raw_texts([a.input_strides for a in args]),
                "concrete_inputs": _raw_texts([a.concrete_inputs for a in args]),
                "flop": _floats([a.flops for a in args]),
            },
        )

    def _memory(self, evs: Sequence[Event]) -> dict[str, pa.Array]:
        args = [e.args or NO_ARGS for e in evs]
        dev = [
            a.mem_device_id if a.mem_device_type in GPU_DEVICE_TYPES and (a.mem_device_id or 0) >= 0 else None
            for a in args
        ]
        return {
            "device": pa.array(dev, I32),
            "pid": int_column([e.pid for e in evs]),
            "tid": int_column([e.tid for e in evs]),
            "ts": ns([e.ts for e in evs], self.exact, self.in_ns),
            "bytes_delta": pa.array([a.mem_bytes for a in args], I64),
            "total_allocated": pa.array([a.total_allocated for a in args], I64),
            "total_reserved": pa.array([a.total_reserved for a in args], I64),
            "address": pa.array([a.addr if a.addr is None or a.addr < 2**63 else None for a in args], I64),
        }

    def _flows(self, evs: Sequence[Event]) -> None:
        """Flow ends: (pid, tid, ts) -> id, to fill GPU rows whose args lack a correlation id.

        Plain int/float positions go to columns; anything else (string pids, Decimal times) to a
        dict, so matching stays exactly Python's == on the raw values, last flow winning.
        """
        cols = None if self.exact else _simple_flows(evs)
        if cols is None:
            simple = [e for e in evs if _simple_key(e.pid, e.tid, e.ts)]
            for e in evs:
                if not _simple_key(e.pid, e.tid, e.ts):
                    self.flow_side[(e.pid, e.tid, e.ts)] = as_int(e.id)
            cols = {
                "pid": pa.array([e.pid for e in simple], I64),
                "tid": pa.array([e.tid for e in simple], I64),
                "ts": pa.array([float(e.ts) for e in simple], F64),  # type: ignore[arg-type]
                "id": pa.array([as_int(e.id) for e in simple], I64),
            }
        self.parts.setdefault("flow", []).append(cols)
        self.rows["flow"] = self.rows.get("flow", 0) + len(cols["id"])

    def flow_correlation(self, kind: str, corr: pa.Array) -> pa.Array:
        """Fill missing correlation ids from flow-end events at the same (pid, tid, ts)."""
        need = [(row, key) for k, row, key in self.need_flow if k == kind]
        if not need or not (self.n("flow") or self.flow_side):
            return corr
        cols = [self.column("flow", c).to_pylist() for c in ("pid", "tid", "ts", "id")]
        by_pos: dict[tuple[Any, Any, Any], int | None] = {(p, t, s): i for p, t, s, i in zip(*cols, strict=True)}
        values = corr.to_pylist()
        for row, key in need:
            values[row] = (by_pos if _simple_key(*key) else self.flow_side).get(key)
        return int_column(values)

    def _meta(self, evs: Sequence[Event]) -> None:
        for e in evs:
            pid = as_int(e.pid)
            if pid is None:
                continue
            label = (e.args or NO_ARGS).label
            if e.name == "process_name":
                self.procs[pid] = label
            elif e.name == "thread_name" and (tid := as_int(e.tid)) is not None:
                self.threads[(pid, tid)] = label
