#!/usr/bin/env python3
"""Benchmark: wall time and peak RSS of `advisor analyze` (cold and warm cache) and of peers.

Each measurement runs in its own child process and reads that child's peak RSS from wait4(), so
numbers are per command, not per test session. Prints a table and writes docs/benchmarks.md.

    python benchmarks/run.py                       # the largest real fixtures
    python benchmarks/run.py --inputs a.json.gz b.sqlite --repeat 3

Peers measured where installed: a bare `orjson.loads` of each JSON trace (the floor any
per-event-object Python tool pays), `nsys stats` summary reports on nsys SQLite exports,
HolisticTraceAnalysis' temporal breakdown on Kineto traces (`--with-hta`).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = Path(os.environ.get("ADVISOR_REAL_FIXTURES", ROOT.parent / "shared" / "fixtures" / "real"))
DEFAULT_INPUTS = [
    "hta/df_index_resolver__df_index_resolver.json.gz",
    "param/resnet_kineto.json.gz",
    "param/dlrm_8rank",
    "nsys-ai/mfu_2gpu_before.sqlite",
    "pipit/perlmutter-cloverleaf-cuda.sqlite",
    "nvfuser/h100node_hopper_matmul_test_nsys2024.6.2.sqlite",
]

ORJSON_FLOOR = """
import gzip, sys, orjson
p = sys.argv[1]
data = gzip.open(p, 'rb').read() if p.endswith('.gz') else open(p, 'rb').read()
doc = orjson.loads(data)
print(len(doc.get('traceEvents', [])))
"""

HTA_BREAKDOWN = """
import sys, shutil, tempfile, pathlib
from hta.trace_analysis import TraceAnalysis
d = tempfile.mkdtemp()
src = pathlib.Path(sys.argv[1])
for f in ([src] if src.is_file() else sorted(src.iterdir())):
    shutil.copy(f, d)
TraceAnalysis(trace_dir=d).get_temporal_breakdown(visualize=False)
"""

NSYS_REPORTS = "cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_api_sum,nvtx_sum,osrt_sum"


@dataclass
class Sample:
    seconds: float
    peak_rss_mb: float
    ok: bool


def measure(cmd: list[str], env: dict[str, str] | None = None) -> Sample:
    """Run cmd as a child; its own wall time and peak RSS (wait4 rusage, KiB on Linux)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    return Sample(elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status) == 0)


def best(cmd: list[str], repeat: int, env: dict[str, str] | None = None, setup=None) -> Sample:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        if setup:
            setup()
        samples.append(measure(cmd, env))
    ok = all(s.ok for s in samples)
    return Sample(statistics.median(s.seconds for s in samples), max(s.peak_rss_mb for s in samples), ok)


def size_mb(p: Path) -> float:
    files = [f for f in p.iterdir() if f.is_file()] if p.is_dir() else [p]
    return sum(f.stat().st_size for f in files) / 1e6


def rows_for(path: Path, repeat: int, with_hta: bool) -> list[tuple[str, str, Sample]]:
    advisor = [sys.executable, "-m", "advisor", "analyze", str(path), "--format", "json"]
    cache = Path(tempfile.mkdtemp(prefix="advisor-bench-"))
    env = dict(os.environ, ADVISOR_CACHE_DIR=str(cache))
    out = [("advisor analyze (cold cache)", str(path),
            best(advisor, repeat, env, setup=lambda: shutil.rmtree(cache, ignore_errors=True)))]
    measure(advisor, env)  # make sure the cache is warm
    out.append(("advisor analyze (warm cache)", str(path), best(advisor, repeat, env)))
    shutil.rmtree(cache, ignore_errors=True)
    name = path.name
    if name.endswith((".json", ".json.gz")):
        out.append(("orjson.loads floor", str(path), best([sys.executable, "-c", ORJSON_FLOOR, str(path)], repeat)))
    if (name.endswith((".json", ".json.gz")) or path.is_dir()) and with_hta:
        out.append(("HTA temporal breakdown", str(path), best([sys.executable, "-c", HTA_BREAKDOWN, str(path)], 1)))
    if name.endswith(".sqlite") and shutil.which("nsys"):
        work = Path(tempfile.mkdtemp(prefix="advisor-bench-nsys-"))
        copy = work / name  # nsys stats may write next to its input: give it a copy
        shutil.copy(path, copy)
        cmd = ["nsys", "stats", "-q", "--report", NSYS_REPORTS, "--format", "csv", "--output", str(work / "o"), str(copy)]
        out.append(("nsys stats (5 reports)", str(path), best(cmd, repeat)))
        shutil.rmtree(work, ignore_errors=True)
    return out


def render(rows: list[tuple[str, str, Sample]], sizes: dict[str, float]) -> str:
    lines = [
        "| input | size MB | command | wall s (median) | peak RSS MB | vs advisor cold | ok |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    cold = {inp: s for cmd, inp, s in rows if cmd.endswith("(cold cache)")}
    for cmd, inp, s in rows:
        ratio = s.seconds / cold[inp].seconds if inp in cold and cold[inp].seconds else float("nan")
        rel = Path(inp).relative_to(REAL) if Path(inp).is_relative_to(REAL) else Path(inp).name
        lines.append(f"| {rel} | {sizes[inp]:.1f} | {cmd} | {s.seconds:.2f} | {s.peak_rss_mb:.0f} | "
                     f"{ratio:.2f}x | {'yes' if s.ok else 'FAILED'} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", nargs="*", help="trace files (default: the largest shared real fixtures)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--with-hta", action="store_true", help="also time HolisticTraceAnalysis (slow)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    inputs = [Path(p) for p in args.inputs] if args.inputs else [REAL / p for p in DEFAULT_INPUTS]
    inputs = [p for p in inputs if p.exists()]
    rows: list[tuple[str, str, Sample]] = []
    for p in inputs:
        print(f"measuring {p.name} ...", file=sys.stderr)
        rows += rows_for(p, args.repeat, args.with_hta)
    table = render(rows, {str(p): size_mb(p) for p in inputs})
    print(table)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    doc = (
        "# Benchmarks\n\nGenerated by `python benchmarks/run.py` (do not edit by hand). Each row is one command "
        "in its own process: wall time is the median of the repeats, peak RSS the child's maximum resident set "
        "(wait4 rusage). `vs advisor cold` = this command's time divided by `advisor analyze` with an empty "
        f"cache on the same input.\n\nMachine: {machine}; {time.strftime('%Y-%m-%d')}.\n\n{table}\n"
    )
    Path(args.out).write_text(doc)
    return 0 if all(s.ok for _, _, s in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
