"""Map one rank per Dask task, reduce the cross-rank collective analysis in DuckDB over per-rank Parquet.

The map task opens one rank file (through the same cache as `advisor analyze`) and writes its compact
table: its communication kernels (the `collectives` rows of source kernel), on the run clock a directory
read would give it (the file's baseTimeNanoseconds against the run's earliest). The reduce loads every
rank's Parquet into one DuckDB database and runs the same metric SQL (`collective_instances`,
`rank_clocks`, `rank_comm`) the single-process path runs, so both paths give identical rows. A rank whose
task fails is reported by file name with its error; the others are reduced without it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from advisor import metrics

CROSS_RANK = ("collective_instances", "rank_clocks", "rank_comm")
COLUMNS = "rank, device_id, stream_id, start_ns, end_ns, kind, bytes, dtype, communicator, group_size, name_id, source"


@dataclass
class RankResult:
    """What the reduce returns: each cross-rank metric's rows, and the ranks (file names) that failed."""

    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # file name -> error


def map_rank(path: str, out_dir: str, shift_ns: int, cache_dir: str | None = None) -> str:
    """One rank: parse (or reuse the cache), write its communication kernels to Parquet; returns the file."""
    from advisor.ingest import open_run

    run = open_run(path, cache_dir=Path(cache_dir) if cache_dir else None)
    target = Path(out_dir) / (Path(path).name + ".collectives.parquet")
    shift = int(shift_ns)
    cols = COLUMNS.replace("start_ns, end_ns", f"start_ns + {shift} AS start_ns, end_ns + {shift} AS end_ns")
    run.sql(f"COPY (SELECT {cols} FROM collectives WHERE source = 'kernel') TO '{_quote(target)}' (FORMAT parquet)")
    return str(target)


def reduce_ranks(parquet: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The cross-rank metrics over the per-rank Parquet files, by the metric SQL of the single-process path."""
    con = duckdb.connect()
    files = ", ".join(f"'{_quote(Path(p))}'" for p in parquet)
    con.execute(f"CREATE TEMP TABLE collectives AS SELECT * FROM read_parquet([{files}])")
    out: dict[str, list[dict[str, Any]]] = {}
    for name in CROSS_RANK:
        m = metrics.get(name)
        con.execute(f"CREATE TEMP TABLE {m.table} AS {m.sql.strip().rstrip(';')}")
        cur = con.execute(f"SELECT * FROM {m.table}")
        cols = [d[0] for d in cur.description]
        out[name] = [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    con.close()
    return out


def _quote(p: Path) -> str:
    return str(p).replace("'", "''")


def shifts(files: Sequence[Path]) -> list[int]:
    """Each file's clock shift onto the run clock, as a directory read applies it (parsers.kineto.merge)."""
    from advisor.parsers.kineto.merge import _base_ns

    limit = 1 << 40
    bases = [_base_ns([f], limit) for f in files]
    known = [b for b in bases if b is not None]
    low = min(known) if known else None
    return [b - low if b is not None and low is not None else 0 for b in bases]


def client_for(workers: int | None, scheduler: str | None) -> Any:
    """A Dask client: an existing scheduler (argument, else DASK_SCHEDULER_ADDRESS) or a LocalCluster of
    `workers` single-threaded worker processes."""
    from dask.distributed import Client, LocalCluster

    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address:
        return Client(address)  # type: ignore[no-untyped-call]
    cluster = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=workers or 1, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    return Client(cluster)  # type: ignore[no-untyped-call]


def analyze_ranks(files: Sequence[Path], out_dir: Path, client: Any, cache_dir: Path | None = None) -> RankResult:
    """Map every rank file on `client`'s workers (one task per rank), reduce in this process."""
    from dask.distributed import as_completed

    out_dir.mkdir(parents=True, exist_ok=True)
    cache = str(cache_dir) if cache_dir else None
    futures = {
        client.submit(map_rank, str(f), str(out_dir), s, cache, key=f"rank-{f.name}", pure=False): f.name
        for f, s in zip(files, shifts(files), strict=True)
    }
    done: list[str] = []
    failed: dict[str, str] = {}
    for fut in as_completed(list(futures)):  # type: ignore[no-untyped-call]
        try:
            done.append(fut.result())
        except Exception as e:  # a failed rank is reported by name; the others are still reduced
            failed[futures[fut]] = f"{type(e).__name__}: {e}"
    return RankResult(reduce_ranks(sorted(done)) if done else {}, failed)


def analyze_local(files: Sequence[Path], out_dir: Path, cache_dir: Path | None = None) -> RankResult:
    """The same map and reduce in this process, one rank after another (no Dask)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = str(cache_dir) if cache_dir else None
    done = [map_rank(str(f), str(out_dir), s, cache) for f, s in zip(files, shifts(files), strict=True)]
    return RankResult(reduce_ranks(sorted(done)))
