"""Finished per-kind columns of one rank file -> model tables.

The cross-category work runs here, vectorized over whole columns: kernel/memop/sync -> the runtime
call that launched it (a hash lookup on the correlation id), names -> string ids, NCCL kernels ->
their record_param_comms op. The nesting of ranges and cpu ops is numpy sorts and binary searches
(`nesting`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from advisor.parsers.base import Interner
from advisor.parsers.kineto.columns import I32, I64, KINDS, NAME_TYPE, STR, CommsOp, FileColumns, per_name
from advisor.parsers.kineto.mapping import mappings
from advisor.parsers.kineto.nesting import nest

# the order the table builders used to meet cleaned durations: the order of the `cleaned_*` notes
DUR_GROUPS = (
    ("runtime", "driver"),
    ("kernel",),
    ("memcpy",),
    ("memset",),
    ("sync",),
    ("step", "user_annotation", "gpu_user_annotation"),
    ("cpu_op", "python_function"),
    ("comms",),
)


@dataclass
class Ctx:
    """Per-file conversion state shared by the table builders."""

    interner: Interner
    cols: FileColumns
    shift_ns: int
    next_range_id: int
    next_op_id: int

    def times(self, *kinds: str) -> tuple[pa.Array, pa.Array]:
        start = _concat([self.cols.column(k, "start") for k in kinds], I64)
        dur = _concat([self.cols.column(k, "dur") for k in kinds], I64)
        if self.shift_ns:
            start = pc.add(start, self.shift_ns)
        return start, pc.add(start, dur)

    def col(self, kinds: tuple[str, ...], name: str) -> pa.Array:
        return _concat([self.cols.column(k, name) for k in kinds], KINDS[kinds[0]][name])

    def names(self, *kinds: str) -> pa.Array:
        """Interned name ids, in first-seen order over the kinds' rows (as one dictionary_encode would)."""
        unified = pa.chunked_array([self.cols.column(k, "name") for k in kinds], NAME_TYPE).unify_dictionaries()
        if unified.num_chunks == 0:
            return pa.array([], I64)
        dictionary = unified.chunk(0).dictionary
        indices = pa.chunked_array([c.indices for c in unified.chunks], I32).combine_chunks()
        mapping = pa.array(self.interner.ids(dictionary.to_pylist()), I64)
        return mapping.take(indices)


def _labels(*runs: tuple[str, int]) -> pa.Array:
    """A string column of runs of one value each, e.g. ("cpu_op", 3), ("python_function", 2)."""
    return pa.concat_arrays([pa.array([], STR)] + [pa.repeat(pa.scalar(v, STR), n) for v, n in runs])


def _concat(arrays: list[pa.Array], typ: pa.DataType) -> pa.Array:
    if len(arrays) == 1:
        return arrays[0]
    return pa.chunked_array(arrays, typ).combine_chunks()


def merged_counts(cols: FileColumns) -> dict[str, int]:
    """Decode notes, then cleaned durations in builder order (missing before negative)."""
    counts = dict(cols.counts)
    for group in DUR_GROUPS:
        for key in ("missing_dur", "negative_dur", "impossible_dur"):
            total = sum(cols.dur_counts.get(k, {}).get(key, 0) for k in group)
            if total:
                counts[key] = counts.get(key, 0) + total
    return counts


def lookup(keys: pa.Array, value_keys: pa.Array, values: pa.Array) -> pa.Array:
    """values[position of key in value_keys] (first match), null where absent: a vectorized join."""
    if len(value_keys) == 0:
        return pa.nulls(len(keys), values.type)
    return values.take(pc.index_in(keys, value_set=value_keys))


def build_tables(ctx: Ctx, rank: int | None) -> dict[str, pa.Table]:
    """Every table of the file, in the order names are interned; each kind's columns are released
    as soon as the tables that read them are built."""
    c = ctx.cols
    api = _api_calls(ctx)
    launches = _launches(ctx, api)
    kernels = _kernels(ctx, api, launches)
    memops = _memops(ctx, api, launches)
    c.release("memcpy", "memset", "flow")
    sync = _sync(ctx, api, launches)
    c.release("runtime", "driver", "sync")
    ranges = _ranges(ctx)
    c.release("step", "user_annotation", "gpu_user_annotation")
    cpu_ops = _cpu_ops(ctx)
    c.release("cpu_op", "python_function")
    collectives = _collectives(ctx, rank, kernels, cpu_ops)
    c.release("kernel")
    return {
        "api_calls": api,
        "kernels": kernels,
        "memops": memops,
        "sync": sync,
        "ranges": ranges,
        "cpu_ops": cpu_ops,
        "collectives": collectives,
        "memory_events": _memory_events(ctx),
        "threads": _threads(c),
    }


def _api_calls(ctx: Ctx) -> pa.Table:
    kinds = ("runtime", "driver")
    start, end = ctx.times(*kinds)
    n_rt = ctx.cols.n("runtime")
    hip = pa.chunked_array(
        [per_name(ctx.cols.column(k, "name"), lambda s: s.startswith("hip"), pa.bool_()) for k in kinds], pa.bool_()
    ).combine_chunks()
    cuda = _labels(("cuda_runtime", n_rt), ("cuda_driver", ctx.cols.n("driver")))
    return pa.table(
        {
            "pid": ctx.col(kinds, "pid"),
            "tid": ctx.col(kinds, "tid"),
            "start_ns": start,
            "end_ns": end,
            "api": pc.if_else(hip, "hip_runtime", cuda),
            "name_id": ctx.names(*kinds),
            "correlation_id": ctx.col(kinds, "correlation"),
            "external_id": ctx.col(kinds, "external_id"),
        }
    )


LAUNCHED = ("kernel", "memcpy", "memset", "sync")
Launch = tuple[pa.Array, pa.Array | None]  # correlation ids, row of the launching runtime call (None: no calls)


def _launches(ctx: Ctx, api: pa.Table) -> dict[str, Launch]:
    """kind -> (correlation ids, row of the launching runtime call in `api` or null), for every GPU kind.

    One hash lookup for all kinds: hashing the ~1M runtime correlation ids is the cost, not probing.
    Same matches as `lookup` (first match; a null id matches the first null one).
    """
    c = ctx.cols
    corr = {
        k: c.column(k, "correlation") if k == "sync" else c.flow_correlation(k, c.column(k, "correlation"))
        for k in LAUNCHED
    }
    keys = api["correlation_id"].combine_chunks()
    if len(keys) == 0:
        return {k: (v, None) for k, v in corr.items()}
    rows = pc.index_in(pa.concat_arrays(list(corr.values())), value_set=keys)
    out: dict[str, Launch] = {}
    at = 0
    for k, v in corr.items():
        out[k] = (v, rows.slice(at, len(v)))
        at += len(v)
    return out


def _launch_info(api: pa.Table, launch: Launch) -> tuple[pa.Array, pa.Array, pa.Array]:
    """pid, tid, External id of the runtime call that launched each GPU activity (from `_launches`)."""
    corr, rows = launch
    cols = [api[c].combine_chunks() for c in ("pid", "tid", "external_id")]
    pid, tid, ext = (pa.nulls(len(corr), col.type) if rows is None else col.take(rows) for col in cols)
    return pid, tid, ext


def _kernels(ctx: Ctx, api: pa.Table, launches: dict[str, Launch]) -> pa.Table:
    c = ctx.cols
    start, end = ctx.times("kernel")
    corr = launches["kernel"][0]
    pid, _, launch_ext = _launch_info(api, launches["kernel"])
    out: dict[str, pa.Array] = {
        "device_id": c.column("kernel", "device"),
        "stream_id": c.column("kernel", "stream"),
        "context_id": c.column("kernel", "context"),
        "pid": pid,
        "start_ns": start,
        "end_ns": end,
        "name_id": ctx.names("kernel"),
        "correlation_id": corr,
    }
    for dim in ("grid", "block"):
        for axis in "xyz":
            out[f"{dim}_{axis}"] = c.column("kernel", f"{dim}_{axis}")
    out["registers_per_thread"] = c.column("kernel", "registers")
    out["shared_memory_bytes"] = c.column("kernel", "shared_memory")
    out["external_id"] = pc.coalesce(c.column("kernel", "external_id"), launch_ext)
    return pa.table(out)


def _memops(ctx: Ctx, api: pa.Table, launches: dict[str, Launch]) -> pa.Table:
    c = ctx.cols
    parts = []
    for op in ("memcpy", "memset"):
        start, end = ctx.times(op)
        corr = launches[op][0]
        pid, _, launch_ext = _launch_info(api, launches[op])
        parts.append(
            pa.table(
                {
                    "device_id": c.column(op, "device"),
                    "stream_id": c.column(op, "stream"),
                    "context_id": c.column(op, "context"),
                    "pid": pid,
                    "start_ns": start,
                    "end_ns": end,
                    "op": pa.array([op] * c.n(op), STR),
                    "copy_kind": c.column(op, "copy_kind"),
                    "src_kind": c.column(op, "src_kind"),
                    "dst_kind": c.column(op, "dst_kind"),
                    "bytes": c.column(op, "bytes"),
                    "correlation_id": corr,
                    "external_id": pc.coalesce(c.column(op, "external_id"), launch_ext),
                }
            )
        )
    return pa.concat_tables(parts)


def _sync(ctx: Ctx, api: pa.Table, launches: dict[str, Launch]) -> pa.Table:
    c = ctx.cols
    start, end = ctx.times("sync")
    corr = launches["sync"][0]
    pid, tid, _ = _launch_info(api, launches["sync"])
    return pa.table(
        {
            "device_id": c.column("sync", "device"),
            "stream_id": c.column("sync", "stream"),
            "pid": pid,
            "tid": tid,
            "start_ns": start,
            "end_ns": end,
            "kind": c.column("sync", "kind") if c.n("sync") else pa.array([]),  # untyped when empty, as before
            "correlation_id": corr,
        }
    )


def _ranges(ctx: Ctx) -> pa.Table:
    c = ctx.cols
    cpu, gpu = ("step", "user_annotation"), "gpu_user_annotation"
    n_cpu, n_gpu = c.n("step") + c.n("user_annotation"), c.n(gpu)
    start, end = ctx.times(*cpu, gpu)
    step = ctx.col((*cpu, gpu), "step")
    ua_source = pc.if_else(pc.is_null(c.column("user_annotation", "step")), "user_annotation", "profiler_step")
    source = pa.chunked_array(
        [pa.array(["profiler_step"] * c.n("step"), STR), ua_source, pa.array(["gpu_user_annotation"] * n_gpu, STR)],
        STR,
    ).combine_chunks()
    host_pid, host_tid = ctx.col(cpu, "pid"), ctx.col(cpu, "tid")
    device = c.column(gpu, "device")
    gpu_p = pc.cast(pc.subtract(pa.scalar(-1, I32), pc.fill_null(device, 0)), I64)
    nest_p = pa.chunked_array([host_pid, gpu_p], I64).combine_chunks()
    nest_t = pa.chunked_array([host_tid, c.column(gpu, "stream")], I64).combine_chunks()
    parent, depth = nest(nest_p, nest_t, start, end)
    base = ctx.next_range_id
    ctx.next_range_id += n_cpu + n_gpu
    return pa.table(
        {
            "range_id": pa.array(np.arange(base, base + n_cpu + n_gpu, dtype=np.int64)),
            "parent_id": pc.add(parent, base),
            "depth": depth,
            "source": source,
            "name_id": ctx.names(*cpu, gpu),
            "pid": pa.chunked_array([host_pid, pa.nulls(n_gpu, I64)], I64).combine_chunks(),
            "tid": pa.chunked_array([host_tid, pa.nulls(n_gpu, I64)], I64).combine_chunks(),
            "device_id": pa.chunked_array([pa.nulls(n_cpu, I32), device], I32).combine_chunks(),
            "start_ns": start,
            "end_ns": end,
            "step": step,
        }
    )


def _cpu_ops(ctx: Ctx) -> pa.Table:
    kinds = ("cpu_op", "python_function")
    start, end = ctx.times(*kinds)
    pid, tid = ctx.col(kinds, "pid"), ctx.col(kinds, "tid")
    parent, depth = nest(pid, tid, start, end)
    n = ctx.cols.n("cpu_op") + ctx.cols.n("python_function")
    base = ctx.next_op_id
    ctx.next_op_id += n
    return pa.table(
        {
            "op_id": pa.array(np.arange(base, base + n, dtype=np.int64)),
            "parent_id": pc.add(parent, base),
            "depth": depth,
            "category": _labels(("cpu_op", ctx.cols.n("cpu_op")), ("python_function", ctx.cols.n("python_function"))),
            "name_id": ctx.names(*kinds),
            "pid": pid,
            "tid": tid,
            "start_ns": start,
            "end_ns": end,
            "external_id": ctx.col(kinds, "external_id"),
            "sequence_number": ctx.col(kinds, "sequence_number"),
            "input_shapes": ctx.col(kinds, "input_shapes"),
            "input_dtypes": ctx.col(kinds, "input_dtypes"),
            "input_strides": ctx.col(kinds, "input_strides"),
            "concrete_inputs": ctx.col(kinds, "concrete_inputs"),
            "flop": ctx.col(kinds, "flop"),
        }
    )


def _nccl_kind(name: str) -> str:
    for word, kind in mappings().nccl_kernel_kinds:
        if word in name:
            return kind
    return "other"


def _collectives(ctx: Ctx, rank: int | None, kernels: pa.Table, cpu_ops: pa.Table) -> pa.Table:
    """One row per NCCL/RCCL kernel (source kernel) and per record_param_comms op (source cpu_op).

    A kernel takes size/dtype/group from the nearest record_param_comms whose External id is not
    after the kernel's (the comms op opens the region whose launches the kernel came from).
    """
    comms = ctx.cols.comms
    by_ext = sorted((c.ext, c) for _, c in comms if c.ext >= 0)
    exts = [x for x, _ in by_ext]
    names = ctx.cols.column("kernel", "name")
    is_nccl = per_name(names, lambda s: "nccl" in s.lower(), pa.bool_())
    take = pc.indices_nonzero(is_nccl) if len(is_nccl) else pa.array([], pa.uint64())
    rows: dict[str, list[Any]] = {
        k: [] for k in ("device_id", "stream_id", "kind", "bytes", "dtype", "communicator", "group_size", "source")
    }
    k_names = names.take(take).to_pylist()
    k_ext, dev, stream = (
        kernels[c].combine_chunks().take(take).to_pylist() for c in ("external_id", "device_id", "stream_id")
    )
    for i in range(len(k_names)):
        op = None
        if k_ext[i] is not None and (j := bisect.bisect_right(exts, k_ext[i])) > 0:
            op = by_ext[j - 1][1]
        kind = _nccl_kind(k_names[i] or "")
        if kind == "other" and op is not None:
            kind = op.kind
        _add_comm_row(rows, dev[i], stream[i], kind, op, "kernel")
    for _, c in comms:
        _add_comm_row(rows, None, None, c.kind, c, "cpu_op")
    k_start, k_end, k_name = (kernels[c].combine_chunks().take(take) for c in ("start_ns", "end_ns", "name_id"))
    ops = pa.array([i for i, _ in comms], I64)
    c_start, c_end, c_name = (cpu_ops[c].combine_chunks().take(ops) for c in ("start_ns", "end_ns", "name_id"))
    n = len(rows["kind"])
    return pa.table(
        {
            "device_id": pa.array(rows["device_id"], I32),
            "rank": pa.array([rank] * n, I32),
            "stream_id": pa.array(rows["stream_id"], I64),
            "start_ns": pa.concat_arrays([k_start, c_start]),
            "end_ns": pa.concat_arrays([k_end, c_end]),
            "kind": pa.array(rows["kind"], STR),
            "bytes": pa.array(rows["bytes"], I64),
            "dtype": pa.array(rows["dtype"], STR),
            "communicator": pa.array(rows["communicator"], STR),
            "group_size": pa.array(rows["group_size"], I32),
            "name_id": pa.concat_arrays([k_name, c_name]),
            "source": pa.array(rows["source"], STR),
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


def _memory_events(ctx: Ctx) -> pa.Table:
    c = ctx.cols
    ts = c.column("memory", "ts")
    if ctx.shift_ns:
        ts = pc.add(ts, ctx.shift_ns)
    return pa.table(
        {
            "device_id": c.column("memory", "device"),
            "pid": c.column("memory", "pid"),
            "tid": c.column("memory", "tid"),
            "timestamp_ns": ts,
            "bytes_delta": c.column("memory", "bytes_delta"),
            "total_allocated_bytes": c.column("memory", "total_allocated"),
            "total_reserved_bytes": c.column("memory", "total_reserved"),
            "address": c.column("memory", "address"),
        }
    )


def _threads(c: FileColumns) -> pa.Table:
    procs, threads = c.procs, c.threads
    rows: list[tuple[int, int | None, str | None, str | None]]
    rows = [(p, t, procs.get(p), name) for (p, t), name in threads.items()]
    rows += [(p, None, name, None) for p, name in procs.items() if not any(k[0] == p for k in threads)]
    return pa.table(
        {
            "pid": pa.array([r[0] for r in rows], I64),
            "tid": pa.array([r[1] for r in rows], I64),
            "process_name": pa.array([r[2] for r in rows], STR),
            "thread_name": pa.array([r[3] for r in rows], STR),
        }
    )
