"""The normalized trace model: every table and column, with dtype and unit.

Every parser hands over Arrow tables that `validate()` accepts; after ingest DuckDB reads only
these tables. Times are integer nanoseconds on one clock per run (the trace's own clock, which
for nsys is the session clock and for Kineto the profiler's), and names carry their units
(`start_ns`, `bytes`, `flop`). A column that a format cannot fill is null, never a guess; a
table a capture did not record is simply empty and `runs.captured` says which tables were
captured at all (so "no NCCL kernels" and "NCCL was not traced" stay different facts).

Names of kernels, ranges, API calls and ops are interned in `strings` and referenced by
`*_name_id`, the way nsys does it: a 10M-kernel trace has a few thousand distinct names.
Bump SCHEMA_VERSION whenever a column changes; the cache key includes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Arrow loads where a type is asked for: a warm analyze reads the model through DuckDB alone
    import pyarrow as pa

SCHEMA_VERSION = 4

# Arrow type names (pyarrow's constructor of each: `pa.int64()`, ...)
I8, I16, I32, I64 = "int8", "int16", "int32", "int64"
F64, STR, BOOL = "float64", "string", "bool_"


@dataclass(frozen=True)
class Column:
    name: str
    type_name: str  # one of I8 .. BOOL
    doc: str
    required: bool = False  # a parser must fill it (non-null) for every row

    @property
    def dtype(self) -> pa.DataType:
        import pyarrow as pa

        return getattr(pa, self.type_name)()


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]

    @property
    def arrow_schema(self) -> pa.Schema:
        import pyarrow as pa

        return pa.schema([pa.field(c.name, c.dtype, nullable=not c.required) for c in self.columns])

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)


def _t(name: str, doc: str, *cols: Column) -> Table:
    return Table(name, doc, tuple(cols))


C = Column

TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        _t(
            "runs",
            "One row per ingested input (a file, or a directory of rank files read as one run).",
            C("source_path", STR, "input path as given (never written to)", True),
            C("source_sha256", STR, "sha256 of the input bytes (directory: of the member hashes)", True),
            C("source_bytes", I64, "size of the input in bytes", True),
            C("format", STR, "nsys-sqlite | nsys-rep | kineto | ncu-rep | ncu-csv", True),
            C("tool", STR, "profiler that wrote it: Nsight Systems, PyTorch Profiler, Nsight Compute", True),
            C("tool_version", STR, "profiler version as recorded, null when the file does not say"),
            C("export_schema", STR, "nsys export schema version / Kineto schemaVersion"),
            C("capture_start_unix_ns", I64, "wall-clock time of the capture start, ns since epoch"),
            C("trace_start_ns", I64, "first event time on the run clock"),
            C("trace_end_ns", I64, "last event end on the run clock"),
            C("host", STR, "host name(s) of the capture, comma-separated"),
            C("os", STR, "operating system of the capture"),
            C("world_size", I32, "distributed world size when recorded"),
            C("ranks", STR, "comma-separated ranks present in this run"),
            C("captured", STR, "comma-separated model tables this capture recorded at all"),
            C("notes", STR, "JSON object of format-specific facts (exporter quirks, dropped items)"),
        ),
        _t(
            "devices",
            "GPUs (and other accelerators) seen in the run; device_id is unique within the run.",
            C("device_id", I32, "run-unique device id used by every event table", True),
            C("rank", I32, "distributed rank that owns the device, null if unknown"),
            C("local_index", I32, "CUDA/HIP device ordinal on its host"),
            C("host", STR, "host name"),
            C("name", STR, "marketing name, e.g. NVIDIA H100 80GB HBM3"),
            C("vendor", STR, "nvidia | amd | unknown"),
            C("uuid", STR, "device UUID"),
            C("compute_capability", STR, "e.g. 9.0 (NVIDIA) or gfx942 (AMD)"),
            C("sm_count", I32, "streaming multiprocessors / compute units"),
            C("memory_bytes", I64, "device memory size"),
            C("sm_clock_hz", I64, "max SM clock"),
            C("memory_clock_hz", I64, "max memory clock"),
            C("memory_bus_width_bits", I32, "memory bus width"),
            C("peak_memory_bandwidth_bytes_per_s", F64, "peak DRAM bandwidth, as the trace states it"),
            C("l2_cache_bytes", I64, "L2 cache size"),
            C("max_threads_per_sm", I32, "max resident threads per SM"),
            C("max_registers_per_sm", I32, "registers per SM"),
            C("max_shared_memory_per_sm_bytes", I64, "shared memory per SM"),
        ),
        _t(
            "kernels",
            "GPU kernel executions.",
            C("device_id", I32, "devices.device_id", True),
            C("stream_id", I64, "stream (nsys streamId / Kineto stream)"),
            C("context_id", I64, "CUDA context"),
            C("pid", I64, "process that launched it"),
            C("start_ns", I64, "GPU start", True),
            C("end_ns", I64, "GPU end", True),
            C("name_id", I64, "strings.string_id of the demangled name", True),
            C("short_name_id", I64, "strings.string_id of the short name (nsys shortName)"),
            C("correlation_id", I64, "links to the launching api_calls row"),
            C("graph_id", I64, "CUDA graph id when launched from a graph"),
            C("graph_node_id", I64, "CUDA graph node id"),
            C("grid_x", I32, ""), C("grid_y", I32, ""), C("grid_z", I32, ""),
            C("block_x", I32, ""), C("block_y", I32, ""), C("block_z", I32, ""),
            C("registers_per_thread", I32, "registers per thread"),
            C("static_shared_memory_bytes", I32, "static shared memory per block"),
            C("dynamic_shared_memory_bytes", I32, "dynamic shared memory per block"),
            C("shared_memory_bytes", I32, "static + dynamic shared memory per block (Kineto records only the sum)"),
            C("local_memory_bytes", I32, "local memory per thread (spills land here)"),
            C("external_id", I64, "Kineto External id linking to the cpu_op"),
        ),
        _t(
            "memops",
            "Memory copies and memsets executed by the GPU (or DMA engines).",
            C("device_id", I32, "devices.device_id", True),
            C("stream_id", I64, "stream"),
            C("context_id", I64, "CUDA context"),
            C("pid", I64, "process"),
            C("start_ns", I64, "start", True),
            C("end_ns", I64, "end", True),
            C("op", STR, "memcpy | memset", True),
            C("copy_kind", STR, "HtoD | DtoH | DtoD | HtoH | PtoP | unknown (memset: null)"),
            C("src_kind", STR, "pageable | pinned | device | managed | array | unknown"),
            C("dst_kind", STR, "pageable | pinned | device | managed | array | unknown"),
            C("bytes", I64, "bytes moved or set"),
            C("correlation_id", I64, "links to the issuing api_calls row"),
            C("graph_id", I64, "CUDA graph id"),
            C("external_id", I64, "Kineto External id"),
        ),
        _t(
            "api_calls",
            "Host API calls: CUDA/HIP runtime and driver, OS runtime (file reads, waits), cuDNN/cuBLAS.",
            C("pid", I64, "process"),
            C("tid", I64, "thread"),
            C("start_ns", I64, "enter", True),
            C("end_ns", I64, "return", True),
            C("api", STR, "cuda_runtime | cuda_driver | hip_runtime | osrt | cudnn | cublas | other", True),
            C("name_id", I64, "strings.string_id of the function name", True),
            C("correlation_id", I64, "links to kernels/memops/sync"),
            C("return_value", I64, "return code"),
            C("external_id", I64, "Kineto External id"),
        ),
        _t(
            "sync",
            "Synchronization: host waits on stream/event/context/device, and GPU-side stream waits.",
            C("device_id", I32, "devices.device_id, null when not known"),
            C("stream_id", I64, "stream waited on"),
            C("pid", I64, "process"),
            C("tid", I64, "host thread that waited"),
            C("start_ns", I64, "start", True),
            C("end_ns", I64, "end", True),
            C("kind", STR, "stream | event | context | device | stream_wait_event | unknown", True),
            C("correlation_id", I64, "links to the api_calls row"),
            C("event_id", I64, "CUDA event id where recorded"),
        ),
        _t(
            "ranges",
            "Annotated ranges: NVTX push/pop and start/end, Kineto user annotations, ProfilerStep#N.",
            C("range_id", I64, "run-unique id", True),
            C("parent_id", I64, "enclosing range on the same thread (null at top level)"),
            C("depth", I32, "nesting depth on its thread, 0 at top", True),
            C("source", STR, "nvtx | user_annotation | gpu_user_annotation | profiler_step", True),
            C("domain", STR, "NVTX domain name, null for the default domain"),
            C("name_id", I64, "strings.string_id of the range text", True),
            C("pid", I64, "process"),
            C("tid", I64, "thread (GPU annotations: null)"),
            C("device_id", I32, "set for GPU-side annotations"),
            C("start_ns", I64, "start", True),
            C("end_ns", I64, "end (instant markers: equal to start)", True),
            C("step", I64, "iteration number for ProfilerStep#N"),
        ),
        _t(
            "cpu_ops",
            "Framework ops on the host (torch ops, python functions), with shapes and FLOPs when recorded.",
            C("op_id", I64, "run-unique id", True),
            C("parent_id", I64, "enclosing op on the same thread"),
            C("depth", I32, "nesting depth on its thread", True),
            C("category", STR, "cpu_op | python_function | other", True),
            C("name_id", I64, "strings.string_id", True),
            C("pid", I64, "process"),
            C("tid", I64, "thread"),
            C("start_ns", I64, "start", True),
            C("end_ns", I64, "end", True),
            C("external_id", I64, "Kineto External id (links runtime calls and kernels)"),
            C("sequence_number", I64, "autograd sequence number"),
            C("input_shapes", STR, "JSON of input dims"),
            C("input_dtypes", STR, "JSON of input types"),
            C("input_strides", STR, "JSON of input strides (Kineto `Input Strides`)"),
            C("concrete_inputs", STR, "JSON of scalar input values (Kineto `Concrete Inputs`)"),
            C("flop", F64, "floating point operations recorded by the profiler (with_flops)"),
        ),
        _t(
            "collectives",
            "Collective / point-to-point communication (NCCL/RCCL/gloo), one row per GPU kernel or op.",
            C("device_id", I32, "devices.device_id"),
            C("rank", I32, "rank"),
            C("stream_id", I64, "stream"),
            C("start_ns", I64, "start", True),
            C("end_ns", I64, "end", True),
            C("kind", STR, "all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | reduce | send_recv | "
              "send | recv | other", True),
            C("bytes", I64, "message size in bytes (input) where recorded"),
            C("dtype", STR, "element type"),
            C("communicator", STR, "process group / communicator id"),
            C("group_size", I32, "ranks in the group"),
            C("name_id", I64, "strings.string_id of the kernel/op name"),
            C("source", STR, "kernel | cpu_op | nvtx", True),
        ),
        _t(
            "gpu_metrics",
            "Sampled GPU counters (nsys --gpu-metrics-device): one row per sample and metric.",
            C("device_id", I32, "devices.device_id", True),
            C("timestamp_ns", I64, "sample time", True),
            C("metric", STR, "metric name as the profiler calls it", True),
            C("value", F64, "sample value (unit in the metric name, usually % of peak)"),
        ),
        _t(
            "memory_events",
            "Allocator activity: allocations and frees with running totals (Kineto [memory], nsys CUDA memory usage).",
            C("device_id", I32, "device, null for host memory"),
            C("pid", I64, "process"),
            C("tid", I64, "thread"),
            C("timestamp_ns", I64, "time", True),
            C("bytes_delta", I64, "positive for allocation, negative for free"),
            C("total_allocated_bytes", I64, "allocator's running allocated total"),
            C("total_reserved_bytes", I64, "allocator's reserved total"),
            C("address", I64, "pointer"),
        ),
        _t(
            "um_faults",
            "Unified-memory page faults (nsys --cuda-um-cpu-page-faults / --cuda-um-gpu-page-faults): a processor "
            "touched a managed page it did not hold, and the driver migrated or mapped it on demand.",
            C("kind", STR, "cpu | gpu: the processor that faulted", True),
            C("device_id", I32, "devices.device_id of the GPU that faulted; null for CPU faults"),
            C("pid", I64, "process"),
            C("tid", I64, "host thread of a CPU fault, where the export records it (nsys records only the process)"),
            C("start_ns", I64, "GPU: start of the fault group's handling; CPU: time of the fault", True),
            C("end_ns", I64, "GPU: end of the fault group's handling; CPU: equal to start_ns (an instant)", True),
            C("address", I64, "virtual address of the faulting page"),
            C("fault_count", I64, "faults in this row: nsys groups a GPU's faults on one page (1 for a CPU fault)",
              True),
            C("access", STR, "GPU faults: read | write | atomic | prefetch | unknown; null for CPU faults"),
        ),
        _t(
            "um_migrations",
            "Unified-memory page migrations the driver performed (nsys unified HtoD/DtoH/DtoD copies, with their "
            "cause). The same transfers also appear in memops as copies: this table says why they moved.",
            C("device_id", I32, "devices.device_id of the GPU side of the transfer", True),
            C("start_ns", I64, "start", True),
            C("end_ns", I64, "end", True),
            C("direction", STR, "HtoD | DtoH | DtoD | unknown", True),
            C("cause", STR, "fault | user_prefetch | speculative_prefetch | eviction | access_counters | unknown",
              True),
            C("bytes", I64, "bytes migrated"),
            C("address", I64, "virtual base address of the pages moved"),
        ),
        _t(
            "threads",
            "Host threads and processes with names (for attributing waits to data loader workers etc).",
            C("pid", I64, "process", True),
            C("tid", I64, "thread"),
            C("process_name", STR, "process name / command"),
            C("thread_name", STR, "thread name"),
        ),
        _t(
            "ncu_kernels",
            "Nsight Compute profiled kernel instances (one row per profiled launch).",
            C("ncu_id", I64, "run-unique id", True),
            C("device_id", I32, "devices.device_id"),
            C("name_id", I64, "strings.string_id of the demangled name", True),
            C("launch_index", I64, "order of the launch in the report"),
            C("stream_id", I64, "stream"),
            C("grid_x", I32, ""), C("grid_y", I32, ""), C("grid_z", I32, ""),
            C("block_x", I32, ""), C("block_y", I32, ""), C("block_z", I32, ""),
            C("registers_per_thread", I32, ""),
            C("duration_ns", I64, "gpu__time_duration.sum"),
            C("nvtx_context", STR, "NVTX range stack at launch, ' > '-joined"),
        ),
        _t(
            "ncu_metrics",
            "Nsight Compute metric values per profiled kernel instance (long form).",
            C("ncu_id", I64, "ncu_kernels.ncu_id", True),
            C("metric", STR, "metric name, e.g. sm__throughput.avg.pct_of_peak_sustained_elapsed", True),
            C("value", F64, "numeric value"),
            C("unit", STR, "unit as ncu reports it"),
            C("text", STR, "string value for non-numeric metrics"),
        ),
        _t(
            "ncu_rule_results",
            "Nsight Compute's own rule results, kept as evidence attributed to Nsight Compute.",
            C("ncu_id", I64, "ncu_kernels.ncu_id", True),
            C("rule", STR, "rule identifier", True),
            C("section", STR, "section the rule belongs to"),
            C("severity", STR, "message type"),
            C("message", STR, "rule text"),
            C("est_speedup_pct", F64, "Nsight Compute's estimated local speedup, %"),
            C("speedup_type", STR, "local | global | unknown: what est_speedup_pct is relative to"),
            C("focus_metrics", STR, "JSON list of the metrics the rule cites: name, value, severity, info"),
        ),
        _t(
            "strings",
            "Interned names referenced by the *_name_id columns.",
            C("string_id", I64, "id", True),
            C("value", STR, "text (untrusted: escape on output)", True),
        ),
    )
}


def empty(name: str) -> pa.Table:
    """An empty table with the model schema of `name`."""
    return TABLES[name].arrow_schema.empty_table()
