"""Measure the Dask map/reduce of the cross-rank analysis on generated N-rank runs (benchmarks/ranks.py).

    python benchmarks/ranks_bench.py TEMPLATE WORK_DIR --ranks 64 256 1024 --workers 1 2

Each (ranks, workers) pair runs in its own process with an empty cache: wall time of the map and reduce
(LocalCluster start-up excluded and reported apart), the driver's peak RSS (this process: what the reduce
holds) and the largest worker's peak RSS (each worker's own getrusage). Prints one Markdown row per pair.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(run_dir: Path, workers: int) -> dict[str, float]:
    """One pair, in this process."""
    from advisor.distributed import mapreduce

    t0 = time.monotonic()
    client = mapreduce.client_for(workers, None)
    started = time.monotonic() - t0
    files = sorted(run_dir.glob("*.json.gz"))
    with tempfile.TemporaryDirectory() as tmp:
        t1 = time.monotonic()
        res = mapreduce.analyze_ranks(files, Path(tmp) / "pq", client, Path(tmp) / "cache")
        wall = time.monotonic() - t1
    worker_mb = max(client.run(_peak_mb).values())
    cluster = client.cluster
    client.close()
    cluster.close()
    assert not res.failed and len(res.tables["rank_comm"]) == len(files)
    return {"ranks": len(files), "workers": workers, "wall_s": round(wall, 1), "cluster_start_s": round(started, 1),
            "driver_peak_mb": round(_peak_mb()), "worker_peak_mb": round(worker_mb)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("template", type=Path)
    ap.add_argument("work", type=Path)
    ap.add_argument("--ranks", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--one", nargs=2, metavar=("RUN_DIR", "WORKERS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(measure(Path(a.one[0]), int(a.one[1]))))
        return
    import ranks as gen

    print("| ranks | workers | wall s (map + reduce) | cluster start s | driver peak RSS MB | worker peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in a.ranks:
        run_dir = a.work / f"r{n}"
        if not run_dir.is_dir():
            gen.generate(a.template, run_dir, gen.Spec(n, {n // 2: 400.0}, offset_us=2000.0, jitter_us=20.0))
        for w in a.workers:
            cmd = [sys.executable, __file__, str(a.template), str(a.work), "--one", str(run_dir), str(w)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            m = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {n} | {w} | {m['wall_s']} | {m['cluster_start_s']} | {m['driver_peak_mb']} | "
                  f"{m['worker_peak_mb']} |", flush=True)


if __name__ == "__main__":
    main()
