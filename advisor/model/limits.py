"""DuckDB's memory cap, shared by the nsys parse and every cached run's analysis connection.

Without a cap DuckDB takes up to 80% of RAM: the first analysis of a 0.9 GB nsys export peaked at
4.6 GB. With it, DuckDB spills to a directory inside advisor's cache (never the current directory)
and the same analysis peaks at 1.6 GB for ~15% more CPU. `ADVISOR_DUCKDB_MEMORY` sets it (docs/limits.md).
"""

from __future__ import annotations

import os
import re

from advisor.errors import InputError

DUCKDB_MEMORY_ENV = "ADVISOR_DUCKDB_MEMORY"
DEFAULT_DUCKDB_MEMORY = 1 << 30
_SIZE_RE = re.compile(r"\s*(\d+)\s*([kmgt]?)i?b?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, env: str) -> int:
    """'8G', '512MiB', '1000000' -> bytes; InputError (naming the variable `env`) for anything else."""
    m = _SIZE_RE.fullmatch(text)
    if m is None or int(m.group(1)) <= 0:
        raise InputError(f"{env}={text!r} is not a size", "give bytes or a K/M/G/T suffix, e.g. 16G")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def duckdb_memory() -> int:
    """DuckDB's memory cap: $ADVISOR_DUCKDB_MEMORY when set, else DEFAULT_DUCKDB_MEMORY; under an
    address-space limit, at most a quarter of it (DuckDB counts only its buffers, not the process)."""
    env = os.environ.get(DUCKDB_MEMORY_ENV)
    cap = parse_size(env, DUCKDB_MEMORY_ENV) if env else DEFAULT_DUCKDB_MEMORY
    limit = address_space_limit()
    return cap if limit is None else min(cap, max(64 << 20, limit // AS_SHARE_FOR_DUCKDB))


def duckdb_config() -> dict[str, str | bool | int | float | list[str]]:
    """Every DuckDB database advisor opens: no extension downloads; $ADVISOR_THREADS threads when set.

    The thread count must be given when the database is created: DuckDB starts its thread pool
    there, and under a tight address-space limit creating a thread is what fails (abort, exit 134).
    """
    config: dict[str, str | bool | int | float | list[str]] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    }
    threads = threads_asked()
    if threads is not None:
        config["threads"] = threads
    return config


def threads_asked() -> int | None:
    """The thread count $ADVISOR_THREADS asks for (a positive whole number), else None."""
    threads = os.environ.get("ADVISOR_THREADS", "").strip()
    return int(threads) if threads.isdigit() and int(threads) > 0 else None


def memory_sql(cap: int | None = None) -> str:
    """The SET statement that applies the cap (`cap` bytes, or duckdb_memory()) to a connection."""
    return f"SET memory_limit = '{max(1, (duckdb_memory() if cap is None else cap) >> 20)}MiB'"


ANALYSIS_BYTES_PER_ROW = 128  # DuckDB's cap for analysing a large model: this much per row of its tables
RAM_SHARE_FOR_ANALYSIS = 4  # ... up to this fraction of the machine's (or the container's) memory


def analysis_memory(model_rows: int) -> int:
    """DuckDB's cap for the analysis of a cached run whose model tables hold `model_rows` rows:
    $ADVISOR_DUCKDB_MEMORY when set; else the default, raised to ANALYSIS_BYTES_PER_ROW per model row up to
    a quarter of the memory the machine or its container has (under an address-space limit, still at most
    a quarter of that limit, as duckdb_memory()).

    Why: with the 1 GiB default the analysis of a large trace spilled its sorts, joins and aggregates
    to disk and grew faster than the trace. First analysis at 1 GiB against 4 GiB: the 10 GB Kineto
    benchmark (37.8M model rows) 292 -> 193 s wall, peak 2.0 -> 4.7 GB; the 10M-kernel NVTX export
    (31.5M rows) 521 -> 253 s wall, peak 2.6 -> 5.8 GB. A trace of up to ~8M rows (the 1 GB Kineto
    file: 3.8M) keeps the default and its peak. Setting $ADVISOR_DUCKDB_MEMORY restores a fixed cap.
    """
    if os.environ.get(DUCKDB_MEMORY_ENV) or _FIXED_CAP:
        return duckdb_memory()
    want = min(model_rows * ANALYSIS_BYTES_PER_ROW, machine_memory() // RAM_SHARE_FOR_ANALYSIS)
    cap = max(DEFAULT_DUCKDB_MEMORY, want)
    limit = address_space_limit()
    return cap if limit is None else min(cap, max(64 << 20, limit // AS_SHARE_FOR_DUCKDB))


_FIXED_CAP = False


def keep_fixed_cap() -> None:
    """In this process every analysis keeps duckdb_memory(), whatever its trace's size: a Dask worker, one of
    several analysing ranks on one host, where a quarter of the memory each could add up to more than all."""
    global _FIXED_CAP
    _FIXED_CAP = True


def machine_memory() -> int:
    """Physical memory in bytes, or the container's limit (cgroup v2 memory.max, v1 limit_in_bytes) when lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


# ------------------------------------------------------------------------------------------------
# Address space (ulimit -v / RLIMIT_AS) and running out of memory

MIN_ADDRESS_SPACE = 768 << 20  # measured: 586 MiB aborts in thread creation, 683 MiB runs the small fixtures
FEW_THREADS_BELOW = 4 << 30  # under a smaller address-space limit DuckDB runs one thread
AS_SHARE_FOR_DUCKDB = 4  # under an address-space limit DuckDB gets at most this fraction of it


def address_space_limit() -> int | None:
    """The soft RLIMIT_AS in bytes (`ulimit -v`), or None when unlimited."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def check_address_space() -> None:
    """Refuse, as one line, to start under an address-space limit too small to start at all, and make
    the most of one that is big enough.

    Why: under `ulimit -v 600M` the interpreter died while creating thread pools (exit 127,
    "cannot allocate memory for thread-local data") and, with a large trace, inside pyarrow (SIGSEGV)
    before any error could be printed. Above the minimum, the numeric libraries are kept to one
    thread (each reserves large arenas of address space) and DuckDB's cap to a quarter of the limit.
    """
    limit = address_space_limit()
    if limit is None:
        return
    if limit < MIN_ADDRESS_SPACE:
        from advisor.errors import LimitExceeded

        raise LimitExceeded(
            f"the address-space limit (ulimit -v) is {limit >> 20} MiB, below the {MIN_ADDRESS_SPACE >> 20} MiB "
            "advisor needs to start",
            "raise it (`ulimit -v unlimited`, or at least 1G plus about the trace's size); see docs/limits.md",
        )
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    if limit < FEW_THREADS_BELOW:
        os.environ.setdefault("ADVISOR_THREADS", "1")
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")  # fails as MemoryError, not a crash
    _fewer_malloc_arenas()


def _fewer_malloc_arenas() -> None:
    """glibc reserves 64 MiB of address space per thread arena: two arenas leave room for data."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(-8, 2)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def out_of_memory(e: BaseException) -> InputError | None:
    """Running out of memory (Python, pyarrow or DuckDB) as one line naming the limit and what to do; None
    for any other error. Matched by type name so the CLI need not import pyarrow or DuckDB to ask."""
    names = {c.__name__ for c in type(e).__mro__}
    if not names & {"MemoryError", "ArrowMemoryError", "OutOfMemoryException"}:
        return None
    from advisor.errors import LimitExceeded

    limit = address_space_limit()
    where = f"under the address-space limit of {limit >> 20} MiB (ulimit -v)" if limit else "memory is exhausted"
    return LimitExceeded(
        f"ran out of memory ({where}; DuckDB cap {duckdb_memory() >> 20} MiB)",
        "raise the limit or free memory, lower ADVISOR_DUCKDB_MEMORY so DuckDB spills sooner, or analyze a "
        "smaller trace; see docs/limits.md",
    )


# ------------------------------------------------------------------------------------------------
# Cardinalities: how many devices and streams a run may have

MAX_DEVICES = 16384  # a 2,048-node job of 8 GPUs; the largest real run we know merges 500 ranks
MAX_STREAMS = 65536  # distinct (device, stream) pairs; real captures use tens per device


def check_cardinality(path: str, devices: int, streams: int) -> None:
    """Refuse a run whose device or stream count cannot be real (damaged or junk ids) as one line.

    Why: 10M junk kernel rows with ~1M distinct device ids took 13.5 GB and 187 s, since summaries,
    timelines and rules work per device and per stream. No capture has that many; the ids are junk.
    """
    from advisor.errors import LimitExceeded

    for what, n, cap in (("device ids", devices, MAX_DEVICES), ("(device, stream) pairs", streams, MAX_STREAMS)):
        if n > cap:
            raise LimitExceeded(
                f"{path}: {n:,} distinct {what} in GPU activity, more than the {cap:,} advisor analyzes",
                "the trace's ids look damaged; re-export it, or split a merged multi-run directory (docs/limits.md)",
            )
