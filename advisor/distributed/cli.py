"""`advisor analyze RUN_DIR --workers N | --scheduler ADDRESS`: the cross-rank collective analysis of a
directory of rank traces, one rank per Dask task, reduced in DuckDB in this process."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from advisor import DISTRIBUTION
from advisor.errors import InputError


def run_ranks(args: argparse.Namespace) -> int:
    """Map each rank file of each PATH (a directory) on Dask, reduce, print the per-rank tables as JSON.
    A failed rank is named under `failed_ranks` with its error; exit 2 when every rank failed."""
    from advisor.cli.output import emit, input_paths
    from advisor.distributed import mapreduce
    from advisor.model.store import default_cache_dir
    from advisor.parsers.kineto.merge import rank_files

    for path in args.paths:
        if not Path(path).is_dir():
            raise InputError(f"{path}: --workers/--scheduler read a directory of rank traces", "pass RUN_DIR")
    try:
        client = mapreduce.client_for(args.workers, args.scheduler)
    except ImportError as e:
        hint = f"pip install '{DISTRIBUTION}[distributed]'"
        raise InputError(f"--workers/--scheduler need Dask: {e}", hint) from None
    docs = []
    try:
        for path in args.paths:
            with tempfile.TemporaryDirectory(prefix="advisor-ranks-") as tmp:
                res = mapreduce.analyze_ranks(rank_files(Path(path)), Path(tmp), client, default_cache_dir())
            if not res.tables:
                raise InputError(f"{path}: every rank failed: {res.failed}", "run advisor analyze on one rank file")
            docs.append({"path": path, "ranks": res.tables, "failed_ranks": res.failed})
    finally:
        cluster = getattr(client, "cluster", None)
        client.close()
        if cluster is not None:
            cluster.close()
    emit(json.dumps({"runs": docs}, indent=2, default=str) + "\n", args.output, input_paths(args))
    return 0
