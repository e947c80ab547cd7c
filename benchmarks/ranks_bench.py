"""Measure the Dask analysis of generated N-rank runs (benchmarks/ranks.py): both maps (read, rules), both
reduces, the combine: what `advisor analyze RUN_DIR --workers N` does.

    python benchmarks/ranks_bench.py TEMPLATE WORK_DIR --ranks 64 256 1024 --workers 1 2 [--hta]

Each (ranks, workers) pair runs in its own process with an empty cache: wall time of the analysis
(LocalCluster start-up excluded and reported apart), the driver's peak RSS (this process: the reduce, the
combine, and the LocalCluster's scheduler, which runs in the client process) with its RSS after each stage,
and the largest worker's peak RSS (each worker's own getrusage). Prints one Markdown row per pair. --hta
also loads each run with HTA's TraceAnalysis (every rank into pandas) in its own process: wall and peak RSS
of that process and its children.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def measure(run_dir: Path, workers: int) -> dict[str, Any]:
    """One pair, in this process."""
    from advisor.distributed import mapreduce

    t0 = time.monotonic()
    client = mapreduce.client_for(workers, None)
    started = time.monotonic() - t0
    files = sorted(run_dir.glob("*.json.gz"))
    stages: dict[str, float] = {"start": round(_rss_mb())}

    def progress(done: float, total: float, what: str) -> None:
        if done == total:
            stages[what.split()[0]] = round(_rss_mb())
        if done == total or int(done) % 64 == 0:  # a long run's rate and driver RSS as it goes (stderr)
            print(f"{time.monotonic() - t0:.0f} s {what.split()[0]} {done:.0f}/{total:.0f} driver {_rss_mb():.0f} MB",
                  file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        t1 = time.monotonic()
        res = mapreduce.analyze_ranks(files, Path(tmp) / "pq", client, Path(tmp) / "cache", rules=True,
                                      progress=progress)
        wall = time.monotonic() - t1
    worker_mb = max(client.run(_peak_mb).values())
    cluster = client.cluster
    client.close()
    cluster.close()
    assert not res.failed and len(res.tables["rank_comm"]) == len(files) and res.analysis is not None
    return {"ranks": len(files), "workers": workers, "wall_s": round(wall, 1), "cluster_start_s": round(started, 1),
            "driver_peak_mb": round(_peak_mb()), "worker_peak_mb": round(worker_mb), "driver_rss_mb": stages,
            "findings": len(res.analysis.report.findings)}


def hta(run_dir: Path) -> dict[str, Any]:
    """HTA's multi-rank load of the run (TraceAnalysis parses every rank into pandas), in this process."""
    from hta.trace_analysis import TraceAnalysis

    t0 = time.monotonic()
    TraceAnalysis(trace_dir=str(run_dir))
    wall = time.monotonic() - t0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"wall_s": round(wall, 1), "peak_mb": round(_peak_mb()), "children_peak_mb": round(kids)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("template", type=Path)
    ap.add_argument("work", type=Path)
    ap.add_argument("--ranks", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--hta", action="store_true", help="also time HTA's multi-rank load of each run")
    ap.add_argument("--one", nargs=2, metavar=("RUN_DIR", "WORKERS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        one = hta(Path(a.one[0])) if a.one[1] == "hta" else measure(Path(a.one[0]), int(a.one[1]))
        print(json.dumps(one))
        return
    import ranks as gen

    print("| ranks | workers | wall s (maps + reduces) | cluster start s | driver peak RSS MB | worker peak RSS MB "
          "| driver RSS MB after each stage |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for n in a.ranks:
        run_dir = a.work / f"r{n}"
        if not run_dir.is_dir():
            gen.generate(a.template, run_dir, gen.Spec(n, {n // 2: 400.0}, offset_us=2000.0, jitter_us=20.0))
        for w in a.workers:
            cmd = [sys.executable, __file__, str(a.template), str(a.work), "--one", str(run_dir), str(w)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            m = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {n} | {w} | {m['wall_s']} | {m['cluster_start_s']} | {m['driver_peak_mb']} | "
                  f"{m['worker_peak_mb']} | {m['driver_rss_mb']} |", flush=True)
        if a.hta:
            cmd = [sys.executable, __file__, str(a.template), str(a.work), "--one", str(run_dir), "hta"]
            out = subprocess.run(cmd, capture_output=True, text=True, check=False)
            line = out.stdout.strip().splitlines()[-1:] or [out.stderr.strip().splitlines()[-1]]
            print(f"| {n} | HTA | {line[0]} |", flush=True)


if __name__ == "__main__":
    main()
