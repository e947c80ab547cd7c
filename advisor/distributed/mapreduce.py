"""Map one rank per Dask task, reduce the cross-rank analysis in DuckDB over per-rank Parquet.

Two maps and two reduces, each map one task per rank:

1. `map_rank` opens one rank file (through the same cache as `advisor analyze`) and writes its compact
   tables: its communication kernels (the `collectives` rows of source kernel, on the run clock a directory
   read would give it: the file's baseTimeNanoseconds against the run's earliest) and its `device_balance`
   rows (work, exposed communication and idle per device: durations only), and returns its devices.
2. `reduce_ranks` numbers the devices as a directory read does (parsers.kineto.merge.device_ids), loads
   every rank's Parquet into one DuckDB database and runs the same metric SQL (`collective_instances`,
   `rank_clocks`, `rank_comm`) the single-process path runs, so both paths give identical rows; it writes
   each rank's seeds (advisor.distributed.rankrun).
3. `rankrun.analyze_rank` runs that rank's rules and verdict on its slice of the run, seeded.
4. `advisor.distributed.combine` makes the run's report and verdict from the per-rank outcomes, each folded in
   as it arrives (advisor.distributed.fold), so the driver never holds them all.

A rank whose task fails is reported by file name with its error; the others are reduced without it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from advisor import metrics
from advisor.distributed.fold import Fold
from advisor.distributed.rankrun import RankOutcome, RankPlan, analyze_rank
from advisor.model.limits import keep_fixed_cap
from advisor.model.store import sql_string
from advisor.parsers.base import ProgressFn, no_progress

CROSS_RANK = ("collective_instances", "rank_clocks", "rank_comm")


@dataclass
class RankResult:
    """What the reduce returns: each cross-rank metric's rows, the ranks (file names) that failed, and, where
    the rules ran, how many ranks' outcomes were folded and the run's report (advisor.distributed.combine)."""

    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # file name -> error
    analyzed: int = 0  # ranks whose rules ran (their outcomes folded into `analysis`)
    analysis: Any = None  # combine.RanksAnalysis


@dataclass(frozen=True)
class RankMap:
    """What the first map returns for one rank: its Parquet files, rank, devices (local ordinals), trace span."""

    index: int
    path: str
    collectives: str
    balance: str
    rank: int | None
    world_size: int | None
    devices: tuple[int, ...]
    trace: tuple[int | None, int | None]  # trace_start_ns, trace_end_ns on the run clock
    pace: str = ""  # Parquet of metric host_pace's rows ('' where the rank marks no steps)


def map_rank(path: str, out_dir: str, shift_ns: int, cache_dir: str | None = None, index: int = 0) -> RankMap:
    """One rank: parse (or reuse the cache), write its communication kernels and device balance to Parquet."""
    from advisor.ingest import open_run

    keep_fixed_cap()  # several workers share the host: no per-trace raise of DuckDB's cap
    run = open_run(path, cache_dir=Path(cache_dir) if cache_dir else None)
    try:
        stem = Path(out_dir) / f"{index:06d}"
        shift = int(shift_ns)
        coll = f"{stem}.collectives.parquet"
        run.sql(_copy(f"({_sql('rank_collectives')})", Path(coll)), {"file_idx": index, "shift_ns": shift})
        balance = pace = ""
        if run.count("kernels") or run.count("memops"):
            balance = _rows(index, metrics.query(run, "device_balance"), f"{stem}.balance.parquet")
            pace = _rows(index, metrics.query(run, "host_pace"), f"{stem}.pace.parquet")
        devices = tuple(sorted(int(r[0]) for r in run.sql_rows("SELECT device_id FROM devices")))
        info = run.info
        rank = info.get("ranks")
        span = (_plus(info.get("trace_start_ns"), shift), _plus(info.get("trace_end_ns"), shift))
        return RankMap(index, path, coll, balance, int(rank) if rank and str(rank).isdigit() else None,
                       info.get("world_size"), devices, span, pace)
    finally:
        run.close()


def _rows(index: int, rows: list[dict[str, Any]], parquet: str) -> str:
    """A rank's metric rows, tagged with its file index, written to `parquet` ('' where there are none)."""
    if not rows:
        return ""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"file_idx": index} | r for r in rows]), parquet)
    return parquet


def _plus(v: Any, shift: int) -> int | None:
    return int(v) + shift if v is not None else None


def _sql(name: str) -> str:
    """The SQL of metric `name` (advisor/metrics), or of the reduce's own query `reduce/<name>` over its per-rank
    tables (advisor/metrics/reduce: never run on a run, so no metric), without its header: to wrap in COPY or
    CREATE ... AS."""
    sql = resources.files(metrics).joinpath(f"{name}.sql").read_text() if "/" in name else metrics.get(name).sql
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--")).strip().rstrip(";")


def _copy(what: str, parquet: Path) -> str:
    """COPY of a table, or of a query in parentheses, to Parquet."""
    return f"COPY {what} TO {sql_string(parquet)} (FORMAT parquet)"


@dataclass
class Reduced:
    """The first reduce: cross-rank metric rows, the run's device ids, and each rank's plan for its rules."""

    tables: dict[str, list[dict[str, Any]]]
    plans: list[RankPlan]


def device_map(maps: Sequence[RankMap]) -> dict[int, dict[int, int]]:
    """file index -> (local ordinal -> the run's device_id), numbered as a directory read numbers them."""
    from advisor.parsers.kineto.merge import device_ids

    ids = device_ids([set(m.devices) for m in maps])
    out: dict[int, dict[int, int]] = {m.index: {} for m in maps}
    for (i, local), dev in ids.items():
        out[maps[i].index][local] = dev
    return out


def reduce_ranks(maps: Sequence[RankMap], out_dir: Path, plan: Callable[..., RankPlan] | None = None) -> Reduced:
    """The cross-rank metrics over the per-rank Parquet files (the metric SQL of the single-process path), and,
    with `plan`, each rank's seeds written under out_dir and its plan."""
    maps = sorted(maps, key=lambda m: m.index)
    devs = device_map(maps)
    con = duckdb.connect()
    try:
        con.execute("CREATE TEMP TABLE devmap (file_idx INTEGER, local_id INTEGER, device_id INTEGER)")
        rows = [(i, loc, d) for i, m in devs.items() for loc, d in m.items()]
        if rows:
            con.executemany("INSERT INTO devmap VALUES (?, ?, ?)", rows)
        _load(con, "collectives", [m.collectives for m in maps])  # every map writes one, rows or not
        if not _load(con, "balance_raw", [m.balance for m in maps if m.balance]):
            con.execute("CREATE TEMP TABLE balance_raw (file_idx INTEGER, device_id INTEGER)")
        if not _load(con, "pace_raw", [m.pace for m in maps if m.pace]):
            con.execute("CREATE TEMP TABLE pace_raw (file_idx INTEGER, device_id INTEGER, n_steps BIGINT, "
                        "step_ns BIGINT, blocked_ns BIGINT, pace_ns BIGINT)")
        out: dict[str, list[dict[str, Any]]] = {}
        for name in CROSS_RANK:
            table = metrics.get(name).table
            con.execute(f"CREATE TEMP TABLE {table} AS {_sql(name)}")
            out[name] = _dicts(con, f"SELECT * FROM {table}")
        plans = _seeds(con, maps, devs, out_dir, plan) if plan is not None else []
    finally:
        con.close()
    return Reduced(out, plans)


def _load(con: duckdb.DuckDBPyConnection, table: str, files: Sequence[str]) -> bool:
    """Per-rank Parquet into `table` with device ids of the run (False: no files, no table).

    The files are read with pyarrow and handed to DuckDB as one contiguous Arrow table: DuckDB's own
    read_parquet over thousands of small files keeps about 120 KB per file after the scan (measured: 164 MB
    at 64 files, 277 MB at 1,024, against 164 and 172 MB this way), which would make the driver grow with the
    number of ranks instead of with their rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not files:
        return False
    rows = pa.concat_tables([pq.read_table(p) for p in files], promote_options="permissive").combine_chunks()
    con.register("_ranks_in", rows)
    con.execute(f"CREATE TEMP TABLE {table} AS SELECT t.* REPLACE (coalesce(d.device_id, t.device_id) AS device_id) "
                "FROM _ranks_in t LEFT JOIN devmap d ON d.file_idx = t.file_idx AND d.local_id = t.device_id")
    con.unregister("_ranks_in")
    return True


def _dicts(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _seeds(con: duckdb.DuckDBPyConnection, maps: Sequence[RankMap], devs: Mapping[int, dict[int, int]],
           out_dir: Path, plan: Callable[..., RankPlan]) -> list[RankPlan]:
    """Each rank's seeds (rankrun.SEEDED): its collective instances, plus the others' rows of the instances it
    arrived last in (no device: only its net wait reads them); every rank's rank_comm, rank_clocks,
    device_balance and host_pace rows. One partitioned write for the per-rank cut (one pass, not one scan per rank: the
    driver's work stays linear in the ranks), one file each for the shared ones."""
    seeds = out_dir / "seeds"
    seeds.mkdir(parents=True, exist_ok=True)
    shared = {"rank_comm": "m_rank_comm", "rank_clocks": "m_rank_clocks",
              "device_balance": f"({_sql('reduce/rank_seed_balance')})",
              "host_pace": "(SELECT * EXCLUDE (file_idx) FROM pace_raw ORDER BY device_id)"}
    for name, what in shared.items():
        con.execute(_copy(what, seeds / f"{name}.parquet"))
    world = max((m.world_size for m in maps if m.world_size is not None), default=len(maps) if len(maps) > 1 else None)
    ranks = ",".join(str(r) for r in sorted({m.rank for m in maps if m.rank is not None})) or None
    starts = [m.trace[0] for m in maps if m.trace[0] is not None]
    ends = [m.trace[1] for m in maps if m.trace[1] is not None]
    row = {"world_size": world, "ranks": ranks, "trace_start_ns": min(starts, default=None),
           "trace_end_ns": max(ends, default=None)}
    cut = seeds / "instances"  # one pass writes every rank's cut: file_idx=<i>/data_0.parquet
    empty = seeds / "no_instances.parquet"
    _cut(con, cut, empty)
    plans = []
    for m in maps:
        own = seeds / f"{m.index:06d}"
        own.mkdir(exist_ok=True)
        part = cut / f"file_idx={m.index}" / "data_0.parquet"
        (own / "collective_instances.parquet").symlink_to(part if part.exists() else empty)
        for name in shared:
            (own / f"{name}.parquet").symlink_to(seeds / f"{name}.parquet")
        plans.append(plan(path=m.path, devices=devs[m.index], seeds=str(own), runs_row=row))
    return plans


def _cut(con: duckdb.DuckDBPyConnection, cut: Path, empty: Path) -> None:
    """Each rank's rows of reduce/rank_seed_instances to cut/file_idx=<i>/data_0.parquet (no file_idx column), one pass,
    and none of them (the columns only) to `empty`, the seed of a rank with no instance.

    Written with pyarrow from one Arrow table sorted (stably) by rank, not with DuckDB's partitioned COPY:
    that kept about 150 KB per partition written until the connection closed (measured in process: the seeds
    step added 10 MB to the driver at 64 ranks and 38 MB at 256, released only at close), a transient above
    every stage's RSS that grew with the ranks; this way it adds 5 and 9 MB."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rows = con.execute(_sql("reduce/rank_seed_instances")).to_arrow_table()
    rows = rows.take(pc.sort_indices(rows, [("file_idx", "ascending")]))  # stable: each rank keeps its order
    idx = rows.column("file_idx").to_numpy()
    body = rows.drop_columns(["file_idx"])
    pq.write_table(body.slice(0, 0), empty)
    starts = np.flatnonzero(np.diff(idx)) + 1 if len(idx) else np.array([], dtype=np.int64)
    for lo, hi in zip([0, *starts.tolist()], [*starts.tolist(), len(idx)], strict=True):
        if hi > lo:
            part = cut / f"file_idx={int(idx[lo])}"
            part.mkdir(parents=True, exist_ok=True)
            pq.write_table(body.slice(lo, hi - lo), part / "data_0.parquet")


def shifts(files: Sequence[Path]) -> list[int]:
    """Each file's clock shift onto the run clock, as a directory read applies it (parsers.kineto.merge)."""
    from advisor.parsers.kineto.merge import _base_ns

    limit = 1 << 40
    bases = [_base_ns([f], limit) for f in files]
    known = [b for b in bases if b is not None]
    low = min(known) if known else None
    return [b - low if b is not None and low is not None else 0 for b in bases]


# Entries kept in each of Dask's debugging logs of recent messages, transitions and events (the scheduler's, each
# batched stream's): 1,000 by default, and they hold the messages. In the driver, where the LocalCluster's
# scheduler runs, 3,072 tasks returning 7 KB each left it 17.6 MB larger with 1,000, 3.4 MB with 16.
LOW_LEVEL_LOG = 16


def client_for(workers: int | None, scheduler: str | None) -> Any:
    """A Dask client: an existing scheduler (argument, else DASK_SCHEDULER_ADDRESS) or a LocalCluster of
    `workers` single-threaded worker processes. The workers' scratch space is in this process's private temp
    folder (removed at exit): by default Dask makes `dask-scratch-space` in the system temp dir and leaves it."""
    import dask
    from dask.distributed import Client, LocalCluster

    from advisor.model.workarea import temp_area

    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    settings: dict[str, Any] = {"distributed.admin.low-level-log-length": LOW_LEVEL_LOG}
    if not address:  # the cluster's scheduler and workers make their scratch space from this setting
        settings["temporary-directory"] = str(temp_area())
    with dask.config.set(settings):
        if address:
            return Client(address)  # type: ignore[no-untyped-call]
        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=workers or 1, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        return Client(cluster)  # type: ignore[no-untyped-call]


# a task to run on the cluster: (function, its arguments, Dask key, the rank file's name for progress and errors)
Task = tuple[Callable[..., Any], tuple[Any, ...], str, str]


def in_flight(client: Any) -> int:
    """How many tasks to keep submitted at once: twice the cluster's worker threads (at least 8), so every
    worker has its next rank queued while the scheduler holds a bounded number of task states. All at once,
    every rank's task state stayed in the driver's scheduler until the map ended (after the read map at 1,024
    ranks the driver held 153 MB then, 142 MB bounded)."""
    threads: dict[str, int] = client.nthreads()
    return max(8, 2 * sum(threads.values()))


def _gather(client: Any, tasks: Sequence[Task], progress: ProgressFn, what: str,
            take: Callable[[Any], None] | None = None) -> tuple[list[Any], dict[str, str]]:
    """Run `tasks` with at most `in_flight` submitted, each result as it completes (progress per rank); a failed
    task is named (its file) with its error, never fatal. Each future is released once read, so the workers do
    not keep the results. With `take`, each result is handed to it as it arrives and not kept (the driver
    holds none of them)."""
    from dask.distributed import as_completed

    queue = iter(tasks)
    names: dict[Any, str] = {}
    running = as_completed()  # type: ignore[no-untyped-call]

    def submit(n: int) -> None:
        for fn, args, key, name in itertools.islice(queue, n):
            fut = client.submit(fn, *args, key=key, pure=False)
            names[fut] = name
            running.add(fut)  # type: ignore[no-untyped-call]

    submit(in_flight(client))
    done: list[Any] = []
    failed: dict[str, str] = {}
    for n, fut in enumerate(running, 1):
        name = names.pop(fut)
        try:
            result = fut.result()
        except Exception as e:  # a failed rank is reported by name; the others are still reduced
            failed[name] = f"{type(e).__name__}: {e}"
        else:
            if take is None:
                done.append(result)
            else:
                take(result)
            del result
        fut.release()
        submit(1)
        progress(n, len(tasks), f"{what} {name}")
    return done, failed


def analyze_ranks(
    files: Sequence[Path],
    out_dir: Path,
    client: Any,
    cache_dir: Path | None = None,
    rules: bool = False,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    select: set[str] | None = None,
    progress: ProgressFn = no_progress,
    directory: Path | None = None,
    top: int = 10,
    facts_only: bool = False,
) -> RankResult:
    """Map every rank file on `client`'s workers (one task per rank), reduce in this process; with `rules`, a
    second map runs each rank's rules and verdict and the run's report is combined here. `progress` is called
    after each rank's task (done, total, what) and once per reduce. `directory`: the run's (default: the first
    file's), which its input facts name; `top`: how many top kernels the summary lists; `facts_only` (with
    `rules`: analyze --no-rules): the second map gives the run's facts and sections without rules or verdict."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = str(cache_dir) if cache_dir else None
    shift = dict(zip([str(f) for f in files], shifts(files), strict=True))  # each file's header read once
    reads = [(map_rank, (str(f), str(out_dir), shift[str(f)], cache, i), f"rank-{f.name}", f.name)
             for i, f in enumerate(files)]
    maps, failed = _gather(client, reads, progress, "read")
    if not maps:
        return RankResult({}, failed)
    red = reduce_ranks(maps, out_dir, _planner(shift, cache, options, select, facts_only) if rules else None)
    progress(1, 1, "cross-rank reduce")
    if not rules:
        return RankResult(red.tables, failed)
    names = {p.path: Path(p.path).name for p in red.plans}
    fold, take = _folder(red, select)
    checks = [(analyze_rank, (p,), f"rules-{names[p.path]}", names[p.path]) for p in red.plans]
    _, failed2 = _gather(client, checks, progress, "rules", take)
    res = _combined(red, fold, failed | failed2, options, (directory or files[0].parent, list(files)), top,
                    facts_only)
    progress(1, 1, "combine")
    return res


def _planner(shift: Mapping[str, int], cache: str | None, options: Mapping[str, Mapping[str, Any]] | None,
             select: set[str] | None, facts_only: bool = False) -> Callable[..., RankPlan]:
    def plan(path: str, devices: dict[int, int], seeds: str, runs_row: dict[str, Any]) -> RankPlan:
        return RankPlan(path, shift[path], devices, seeds, runs_row, cache, options,
                        frozenset(select) if select else None, not facts_only)

    return plan


def _folder(red: Reduced, select: set[str] | None) -> tuple[Fold, Callable[[RankOutcome], None]]:
    """An empty fold of the run's rank outcomes, and the function that folds one in (advisor.distributed.fold)."""
    from advisor.rules.registry import select_rules

    fold = Fold()
    index = {p.path: i for i, p in enumerate(red.plans)}
    order = {r.code: i for i, r in enumerate(select_rules(select))}

    def take(o: RankOutcome) -> None:
        fold.add(o, index[o.path], order)

    return fold, take


def _combined(red: Reduced, fold: Fold, failed: dict[str, str], options: Mapping[str, Mapping[str, Any]] | None,
              directory: tuple[Path, list[Path]], top: int = 10, facts_only: bool = False) -> RankResult:
    from advisor.distributed.combine import combine

    seeds = Path(red.plans[0].seeds) if red.plans else None
    select = set(red.plans[0].select) if red.plans and red.plans[0].select else None
    analysis = (combine(fold, seeds, options, select, directory, top, facts_only) if fold.count and seeds is not None
                else None)
    return RankResult(red.tables, failed, fold.count, analysis)


def analyze_local(files: Sequence[Path], out_dir: Path, cache_dir: Path | None = None, rules: bool = False,
                  options: Mapping[str, Mapping[str, Any]] | None = None, select: set[str] | None = None,
                  directory: Path | None = None, facts_only: bool = False) -> RankResult:
    """The same maps and reduces in this process, one rank after another (no Dask)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = str(cache_dir) if cache_dir else None
    sh = shifts(files)
    maps = [map_rank(str(f), str(out_dir), s, cache, i) for i, (f, s) in enumerate(zip(files, sh, strict=True))]
    shift = dict(zip([str(f) for f in files], sh, strict=True))
    red = reduce_ranks(maps, out_dir, _planner(shift, cache, options, select, facts_only) if rules else None)
    if not rules:
        return RankResult(red.tables)
    fold, take = _folder(red, select)
    for p in red.plans:
        take(analyze_rank(p))
    return _combined(red, fold, {}, options, (directory or files[0].parent, list(files)), facts_only=facts_only)
