#!/usr/bin/env python3
"""Benchmark: wall time, CPU time and peak RSS of `advisor analyze` (cold and warm cache) and of peers.

Each measurement runs in its own child process (its own session, so a timeout kills the whole tree)
and reads that child's peak RSS and CPU time from wait4(), so numbers are per command, not per
benchmark session. Peak RSS is the larger of wait4's (the largest single process) and the
sampled sum over the child's process tree, which counts the parallel Kineto reader's workers
together. Prints a table and the targets of issues 10 and 23, and writes docs/benchmarks.md. The row
"parsed cache, first analysis" removes each cache entry's derived results and kept outputs and keeps its parsed
tables: the analysis alone, without the parse (issue 23: no slower than the parse). "warm cache" is a repeated
`analyze`, which prints the output kept from the first (advisor/engine/kept.py); "warm cache, output
recomputed" removes that output first, so the answer is rebuilt from the kept metric results.

    python benchmarks/run.py                                  # the largest real fixtures
    python benchmarks/scale.py all && python benchmarks/run.py --scaled .bench --with-hta
    python benchmarks/run.py --inputs a.json.gz b.sqlite --repeat 3

Peers, on the same files: a bare `orjson.loads` of each JSON trace (the floor any per-event-object
Python tool pays); the columnar floors of issue 23 (one byte pass to newline-delimited JSON, then DuckDB's or
polars' `read_ndjson` with explicit columns: how fast the engine itself reads the events);
HolisticTraceAnalysis' temporal breakdown on Kineto traces (`--with-hta`);
nsys-ai's `diagnose` (its analysis command; 0.3.0 has no `analyze`) on nsys SQLite exports, from
the venv named by `--nsys-ai` (default /tmp/nsysai-venv: `python -m venv /tmp/nsysai-venv &&
/tmp/nsysai-venv/bin/pip install nsys-ai`; its duckdb/pandas pins clash with ours); and `nsys stats`
with five summary reports. Peers are capped by `--peer-timeout` and recorded as "> N s (timed out)".
For `.sqlite` inputs the NVTX attribution (every kernel to the innermost NVTX range open on its
launching thread, `advisor.engine.views.kernel_time_by_range`) is timed on its own, on the warm cache.

The machine is usually shared: wall time is what a user waits, CPU time (user + system of the child
and its waited-for children) is the steadier number; both are reported with the load average.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
FIRST = "advisor analyze (parsed cache, first analysis)"  # the cold run less the parse and the cache write
RECOMPUTED = "advisor analyze (warm cache, output recomputed)"  # the kept output removed: what report/tui/diff pay
SMALL_BYTES = 10e6  # issue 23's small traces: a 3 MB file is what most users have
SCALED = ["kineto-1g.json", "kineto-10g.json", "nsys-1g.sqlite", "nvtx-10m.sqlite"]
GB = 1e9
RAM_BYTES = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

ORJSON_FLOOR = """
import gzip, pathlib, sys, orjson
src = pathlib.Path(sys.argv[1])
docs = []  # a directory of rank files: all of them held at once, as a tool analysing the run would
for p in ([src] if src.is_file() else sorted(f for f in src.iterdir() if f.name.endswith(('.json', '.json.gz')))):
    data = gzip.decompress(p.read_bytes()) if p.name.endswith('.gz') else p.read_bytes()
    docs.append(orjson.loads(data))
    del data
print(sum(len(d.get('traceEvents', [])) for d in docs))
"""

# The floors of issue 23: the events turned into newline-delimited JSON by one byte pass (raw newlines never occur
# inside JSON strings, so every newline can go; then a newline between `}` and `{` cuts between events: Kineto
# args hold scalars and lists, never objects in lists, so `},{` only occurs between events), then read by a
# columnar JSON reader with explicit columns. Each file's text is held once; the NDJSON goes to a temp file.
NDJSON_PASS = """
import gzip, pathlib, re, sys, tempfile
src = pathlib.Path(sys.argv[1])
HEAD, SEP = re.compile(rb'"traceEvents"\\s*:\\s*\\['), re.compile(rb'\\}\\s*,\\s*\\{')
def ndjson(p, out):
    data = gzip.decompress(p.read_bytes()) if p.name.endswith('.gz') else p.read_bytes()
    start = HEAD.search(data).end()
    end = data.rindex(b']', start, data.rindex(b'}'))  # the array's `]`, before the document's last `}`
    body = data[start:end].replace(b'\\n', b' ').replace(b'\\r', b' ')
    del data
    out.write(SEP.sub(b'}\\n{', body).strip() + b'\\n')
files = [src] if src.is_file() else sorted(f for f in src.iterdir() if f.name.endswith(('.json', '.json.gz')))
tmp = tempfile.NamedTemporaryFile(suffix='.ndjson', delete=False)
with tmp:
    for p in files:
        ndjson(p, tmp)
path = tmp.name
"""
DUCKDB_NDJSON_FLOOR = NDJSON_PASS + """
import duckdb, os
cols = "{ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR', pid: 'VARCHAR', tid: 'VARCHAR', ts: 'DOUBLE', " \\
       "dur: 'DOUBLE', id: 'VARCHAR', args: 'JSON'}"
con = duckdb.connect()
con.execute('SET enable_progress_bar = false')
t = con.sql(f"SELECT * FROM read_ndjson('{path}', columns = {cols})").to_arrow_table()
os.unlink(path)
print(t.num_rows)
"""
POLARS_NDJSON_FLOOR = NDJSON_PASS + """
import os, polars as pl
S, F = pl.String, pl.Float64
schema = {'ph': S, 'cat': S, 'name': S, 'pid': S, 'tid': S, 'ts': F, 'dur': F, 'id': S}  # args: no raw-JSON type
t = pl.read_ndjson(path, schema=schema, ignore_errors=True)
os.unlink(path)
print(t.height)
"""

HTA_BREAKDOWN = """
import sys, os, pathlib
from hta.trace_analysis import TraceAnalysis
d = sys.argv[2]  # the benchmark's own folder: removed after the peer, even one stopped at its timeout
src = pathlib.Path(sys.argv[1]).resolve()
for f in ([src] if src.is_file() else sorted(src.iterdir())):
    os.symlink(f, os.path.join(d, f.name))
TraceAnalysis(trace_dir=d).get_temporal_breakdown(visualize=False)
"""

ATTRIBUTION = """
import sys
from advisor.ingest import open_run
from advisor.engine.views import kernel_time_by_range
run = open_run(sys.argv[1])
out = kernel_time_by_range(run)
print(out["launched"], out["attributed"])
"""

# The five summaries under their current names, and under the names nsys before 2023 used (2022.4 here).
SUMMARY = """
import sys
from advisor.ingest import open_run
from advisor.engine.summary import summarize
summarize(open_run(sys.argv[1]))
"""

NSYS_REPORTS = ["cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_api_sum,nvtx_sum,osrt_sum",
                "gpukernsum,gpumemtimesum,cudaapisum,nvtxsum,osrtsum"]
NSYS_NVTX_KERNELS = ["nvtx_kern_sum", "nvtxkernsum"]  # kernel time per NVTX range: nsys' own attribution


@dataclass
class Sample:
    seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    ok: bool
    note: str = ""  # "timed out", "exit 2", "killed by signal 9", "skipped: ..."

    @property
    def ran(self) -> bool:
        return not self.note.startswith("skipped")


@dataclass
class Row:
    input: Path
    command: str
    sample: Sample
    extra: dict[str, str] = field(default_factory=dict)


def skipped(why: str) -> Sample:
    return Sample(float("nan"), float("nan"), float("nan"), False, f"skipped: {why}")


def measure(cmd: list[str], env: dict[str, str] | None = None, timeout: float | None = None,
            cwd: Path | None = None) -> Sample:
    """Run cmd as a child in its own session; its wall time, CPU time and peak RSS (wait4, KiB on Linux)."""
    err_file = tempfile.TemporaryFile()  # noqa: SIM115 - a file, not a pipe: a chatty child must never block on a full pipe
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_file, env=env, cwd=cwd,
                            start_new_session=True)
    timed_out = False
    tree_peak = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        tree_peak = max(tree_peak, tree_rss(proc.pid))
        if timeout is not None and time.perf_counter() - t0 > timeout:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    elapsed = time.perf_counter() - t0
    err_file.seek(0)
    err = err_file.read().decode(errors="replace").strip().splitlines()
    err_file.close()
    code = os.waitstatus_to_exitcode(status)
    note = ""
    if timed_out:
        note = "timed out"
    elif code < 0:
        note = f"killed by signal {-code}"
    elif code:
        note = f"exit {code}: {err[-1][:160] if err else ''}"
    cpu = usage.ru_utime + usage.ru_stime
    peak_mb = max(usage.ru_maxrss / 1024, tree_peak / (1 << 20))
    return Sample(elapsed, cpu, peak_mb, code == 0 and not timed_out, note)


PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss(session: int) -> int:
    """Bytes resident in every process of the session `session` right now (0 where /proc is absent).

    wait4 reports the largest single process of the tree, not their sum; the parallel Kineto reader
    runs worker processes beside the main one, so the peak of the sum is sampled too (every 50 ms).
    """
    total = 0
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return 0
    for d in pids:
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if int(fields[4]) != session:  # field 6 of stat, the session id
                continue
            with open(f"/proc/{d}/statm", "rb") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


def best(cmd: list[str], repeat: int, env: dict[str, str] | None = None, setup: Callable[[], None] | None = None,
         timeout: float | None = None, cwd: Path | None = None) -> Sample:
    """Median wall and CPU time of `repeat` runs, maximum peak RSS; stops at the first failure."""
    samples = []
    for _ in range(repeat):
        if setup:
            setup()
        s = measure(cmd, env, timeout, cwd)
        samples.append(s)
        if not s.ok:
            return s
    return Sample(statistics.median(s.seconds for s in samples), statistics.median(s.cpu_seconds for s in samples),
                  max(s.peak_rss_mb for s in samples), True)


def size_bytes(p: Path) -> int:
    files = [f for f in p.iterdir() if f.is_file()] if p.is_dir() else [p]
    return sum(f.stat().st_size for f in files)


def is_json(p: Path) -> bool:
    return p.name.endswith((".json", ".json.gz")) or p.is_dir()


def rows_for(path: Path, args: argparse.Namespace) -> list[Row]:
    big = size_bytes(path) > 200e6
    repeat = 1 if big else args.repeat
    advisor = [sys.executable, "-m", "advisor", "analyze", str(path), "--format", "json"]
    cache = Path(tempfile.mkdtemp(prefix="advisor-bench-", dir=args.tmp))
    env = dict(os.environ, ADVISOR_CACHE_DIR=str(cache))
    out: list[Row] = []

    def add(command: str, s: Sample) -> None:
        out.append(Row(path, command, s))
        print(f"  {command}: {fmt_time(s)} wall, {s.cpu_seconds:.1f} s CPU, {s.peak_rss_mb:.0f} MB {s.note}",
              file=sys.stderr, flush=True)

    cold = best(advisor, repeat, env, setup=lambda: shutil.rmtree(cache, ignore_errors=True),
                timeout=args.advisor_timeout)
    add("advisor analyze (cold cache)", cold)
    cached = any(cache.glob("*/meta.json"))  # the parse finished and was cached, even if the rules then timed out
    if cold.ok:
        add("advisor analyze (warm cache)", best(advisor, repeat, env, timeout=args.advisor_timeout))
        add(RECOMPUTED, best(advisor, repeat, env, setup=lambda: _drop(cache, "outputs"), timeout=args.advisor_timeout))
    if cached:
        add(FIRST, best(advisor, repeat, env, setup=lambda: _drop(cache, "derived", "outputs"),
                        timeout=args.advisor_timeout))
        add("advisor re-open + summary, no rules (warm)",
            best([sys.executable, "-c", SUMMARY, str(path)], args.repeat, env, timeout=args.advisor_timeout))
        if path.name.endswith(".sqlite") or args.attribution_all:
            add("advisor NVTX attribution (warm)",
                best([sys.executable, "-c", ATTRIBUTION, str(path)], repeat, env, timeout=args.advisor_timeout))
    shutil.rmtree(cache, ignore_errors=True)
    if is_json(path):
        add("orjson.loads floor", _orjson(path, repeat, args))
        add("NDJSON byte pass + DuckDB read_ndjson floor", _floor(DUCKDB_NDJSON_FLOOR, path, repeat, args))
        add("NDJSON byte pass + polars read_ndjson floor", _floor(POLARS_NDJSON_FLOOR, path, repeat, args))
        if args.with_hta:
            add("HTA temporal breakdown", _hta(path, args))
    if path.name.endswith(".sqlite"):
        if args.nsys_ai and Path(args.nsys_ai, "bin", "nsys-ai").exists():
            add("nsys-ai diagnose", _nsys_ai(path, args))
        if shutil.which("nsys"):
            new = _nsys_new_names()
            add("nsys stats (5 reports)", _nsys_stats(path, repeat, args, NSYS_REPORTS[0 if new else 1]))
            add("nsys stats NVTX kernel summary", _nsys_stats(path, repeat, args, NSYS_NVTX_KERNELS[0 if new else 1]))
    return out


def _drop(cache: Path, *folders: str) -> None:
    """Remove `folders` of each cache entry, keeping its parsed tables: without `outputs` (the kept outputs) the
    next `analyze` recomputes its answer from the kept metric results; without `derived` too it is the first
    analysis on a parsed cache, with no parse in it."""
    for name in folders:
        for d in cache.glob(f"*/{name}"):
            shutil.rmtree(d)


def _orjson(path: Path, repeat: int, args: argparse.Namespace) -> Sample:
    need = 7 * size_bytes(path) * (8 if path.name.endswith(".gz") else 1)  # measured: ~7x the JSON text
    if need > 0.9 * RAM_BYTES:
        return skipped(f"needs ~{need / GB:.0f} GB of RAM (7x the JSON), machine has {RAM_BYTES / GB:.0f} GB")
    return best([sys.executable, "-c", ORJSON_FLOOR, str(path)], repeat, timeout=args.peer_timeout)


def _floor(script: str, path: Path, repeat: int, args: argparse.Namespace) -> Sample:
    """A columnar JSON reader's floor: the text held once plus its NDJSON copy (~2x the JSON text)."""
    need = 3 * size_bytes(path) * (8 if path.name.endswith(".gz") else 1)
    if need > 0.9 * RAM_BYTES:
        return skipped(f"needs ~{need / GB:.0f} GB of RAM (3x the JSON), machine has {RAM_BYTES / GB:.0f} GB")
    return best([sys.executable, "-c", script, str(path)], repeat, timeout=args.peer_timeout)


def _hta(path: Path, args: argparse.Namespace) -> Sample:
    need = 5 * size_bytes(path) * (8 if path.name.endswith(".gz") else 1)  # HTA: 2.0 GB for 409 MB (issue 10)
    if need > 0.9 * RAM_BYTES:
        return skipped(f"needs ~{need / GB:.0f} GB of RAM (5x the JSON), machine has {RAM_BYTES / GB:.0f} GB")
    with tempfile.TemporaryDirectory(prefix="advisor-bench-hta-", dir=args.tmp) as links:  # HTA reads a folder
        return measure([sys.executable, "-c", HTA_BREAKDOWN, str(path), links], timeout=args.peer_timeout)


def _nsys_ai(path: Path, args: argparse.Namespace) -> Sample:
    """nsys-ai writes indexes into its input and caches under $HOME: give it a copy and a private home."""
    work = Path(tempfile.mkdtemp(prefix="advisor-bench-nsysai-", dir=args.tmp))
    try:
        copy = work / path.name
        shutil.copyfile(path, copy)
        env = dict(os.environ, HOME=str(work), XDG_CACHE_HOME=str(work / ".cache"))
        exe = str(Path(args.nsys_ai, "bin", "nsys-ai"))
        return measure([exe, "diagnose", str(copy), "--format", "json", "-o", str(work / "findings.json")],
                       env, args.peer_timeout, cwd=work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _nsys_new_names() -> bool:
    out = subprocess.run(["nsys", "stats", "--help-reports"], capture_output=True, text=True, check=False).stdout
    return "cuda_gpu_kern_sum" in out


def _nsys_stats(path: Path, repeat: int, args: argparse.Namespace, reports: str) -> Sample:
    """`nsys stats` exits 0 even when a report is unknown: a run counts only if every CSV was written."""
    work = Path(tempfile.mkdtemp(prefix="advisor-bench-nsys-", dir=args.tmp))
    try:
        copy = work / path.name  # nsys stats may write next to its input: give it a copy
        shutil.copyfile(path, copy)
        cmd = ["nsys", "stats", "-q", "--report", reports, "--format", "csv", "--output", str(work / "o"), str(copy)]
        s = best(cmd, repeat, timeout=args.peer_timeout)
        missing = [r for r in reports.split(",") if not (work / f"o_{r}.csv").exists()]
        if s.ok and missing:
            s.ok, s.note = False, f"no output for {', '.join(missing)}"
        return s
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------------------------------ report


def fmt_time(s: Sample) -> str:
    if not s.ran:
        return "-"
    if s.note == "timed out":
        return f"> {s.seconds:.0f} s (timed out)"
    return f"{s.seconds:.2f}"


def label(p: Path) -> str:
    return str(p.relative_to(REAL)) if p.is_relative_to(REAL) else p.name


def render(rows: list[Row]) -> str:
    lines = [
        "| input | size MB | command | wall s | CPU s | peak RSS MB | time / advisor cold | RSS / advisor cold | "
        "status |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    cold = {r.input: r.sample for r in rows if r.command.endswith("(cold cache)") and r.sample.ok}
    for r in rows:
        s, c = r.sample, cold.get(r.input)
        t_ratio = f"{s.seconds / c.seconds:.2f}x" if c and s.ran and c.seconds else "-"
        m_ratio = f"{s.peak_rss_mb / c.peak_rss_mb:.2f}x" if c and s.ran and c.peak_rss_mb else "-"
        cpu = f"{s.cpu_seconds:.1f}" if s.ran else "-"
        rss = f"{s.peak_rss_mb:.0f}" if s.ran else "-"
        status = "ok" if s.ok else s.note.replace("|", "/")
        lines.append(f"| {label(r.input)} | {size_bytes(r.input) / 1e6:.0f} | {r.command} | {fmt_time(s)} | {cpu} | "
                     f"{rss} | {t_ratio} | {m_ratio} | {status} |")
    return "\n".join(lines)


def _find(rows: list[Row], name: str, command: str) -> Sample | None:
    for r in rows:
        if r.input.name == name and r.command.startswith(command):
            return r.sample
    return None


def targets(rows: list[Row]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for each target of issue 10 that these rows can check."""
    out: list[tuple[str, str, str]] = []

    def check(target: str, measured: str, ok: bool | None) -> None:
        out.append((target, measured, "n/a" if ok is None else ("met" if ok else "MISSED")))

    for r in rows:
        if r.command == "advisor analyze (cold cache)" and is_json(r.input):
            floor = _find(rows, r.input.name, "orjson.loads floor")
            a = r.sample
            if floor and floor.ok and a.ok:
                check(f"{label(r.input)}: analysis faster than orjson.loads",
                      f"{a.seconds:.1f} s vs {floor.seconds:.1f} s wall; "
                      f"{a.cpu_seconds:.1f} vs {floor.cpu_seconds:.1f} s CPU", a.seconds < floor.seconds)
                check(f"{label(r.input)}: peak RSS <= 1/2 of orjson.loads",
                      f"{a.peak_rss_mb:.0f} MB vs {floor.peak_rss_mb:.0f} MB", a.peak_rss_mb <= floor.peak_rss_mb / 2)
        if r.command.startswith("advisor re-open"):
            s = r.sample
            check(f"{label(r.input)}: warm re-open (+ summary) <= 1 s",
                  f"{s.seconds:.2f} s wall, {s.cpu_seconds:.2f} s CPU", s.ok and s.seconds <= 1.0)
    k1 = _find(rows, "kineto-1g.json", "advisor analyze (cold")
    if k1:
        check("Kineto 1 GB <= 8 s", f"{fmt_time(k1)} s wall, {k1.cpu_seconds:.1f} s CPU", k1.ok and k1.seconds <= 8)
        check("Kineto 1 GB <= 2.5 GB RSS", f"{k1.peak_rss_mb:.0f} MB", k1.ok and k1.peak_rss_mb <= 2500)
    n1 = _find(rows, "nsys-1g.sqlite", "advisor analyze (cold")
    if n1:
        check("nsys SQLite 1 GB <= 5 s", f"{fmt_time(n1)} s wall, {n1.cpu_seconds:.1f} s CPU",
              n1.ok and n1.seconds <= 5)
        check("nsys SQLite 1 GB <= 2 GB RSS", f"{n1.peak_rss_mb:.0f} MB", n1.ok and n1.peak_rss_mb <= 2000)
        stats = _find(rows, "nsys-1g.sqlite", "nsys stats")
        if stats and stats.ok:
            check("nsys SQLite 1 GB no slower than nsys stats", f"{n1.seconds:.1f} s vs {stats.seconds:.1f} s",
                  n1.ok and n1.seconds <= stats.seconds)
    nv = _find(rows, "nvtx-10m.sqlite", "advisor NVTX attribution")
    if nv:
        check("10M NVTX x 10M kernels attribution <= 60 s", f"{fmt_time(nv)} s wall, {nv.cpu_seconds:.1f} s CPU",
              nv.ok and nv.seconds <= 60)
        check("10M NVTX x 10M kernels attribution <= 8 GB RSS", f"{nv.peak_rss_mb:.0f} MB",
              nv.ok and nv.peak_rss_mb <= 8000)
    k10 = _find(rows, "kineto-10g.json", "advisor analyze (cold")
    if k10:
        ratio = k10.seconds / k1.seconds if k1 and k1.ok and k10.ok else None
        check("Kineto 10 GB / 1 GB time <= 11", f"{ratio:.1f}" if ratio else k10.note or "-",
              None if ratio is None else ratio <= 11)
        check("Kineto 10 GB never OOMs in 24 GB", k10.note or f"{k10.peak_rss_mb:.0f} MB peak",
              "signal 9" not in k10.note)
    return out


def targets23(rows: list[Row]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for each target of issue 23 (the cold path) that these rows can check."""
    out: list[tuple[str, str, str]] = []

    def check(target: str, s: Sample | None, limit: float, measured: str = "") -> None:
        if s is not None and s.ran:
            out.append((target, measured or f"{fmt_time(s)} s wall, {s.cpu_seconds:.2f} s CPU",
                        "met" if s.ok and s.seconds <= limit else "MISSED"))

    for r in rows:
        small = r.input.is_file() and size_bytes(r.input) <= SMALL_BYTES
        if small and r.command == "advisor analyze (cold cache)":
            check(f"{label(r.input)}: cold <= 0.6 s", r.sample, 0.6)
        if small and r.command == "advisor analyze (warm cache)":
            check(f"{label(r.input)}: warm <= 0.25 s", r.sample, 0.25)
        cold = _find(rows, r.input.name, "advisor analyze (cold")
        if r.command == FIRST and cold is not None and cold.ok and r.sample.ok:
            parse = cold.seconds - r.sample.seconds
            check(f"{label(r.input)}: first analysis on the parsed cache <= the parse (cold less first analysis)",
                  r.sample, parse, f"{r.sample.seconds:.2f} s vs {parse:.2f} s wall")
    k1 = _find(rows, "kineto-1g.json", "advisor analyze (cold")
    check("Kineto 1 GB cold <= 8 s", k1, 8)
    if k1 is not None and k1.ran:
        out.append(("Kineto 1 GB cold <= 2 GB RSS", f"{k1.peak_rss_mb:.0f} MB",
                    "met" if k1.ok and k1.peak_rss_mb <= 2000 else "MISSED"))
    check("Kineto 10 GB cold <= 90 s", _find(rows, "kineto-10g.json", "advisor analyze (cold"), 90)
    check("nsys 1 GB cold <= 25 s", _find(rows, "nsys-1g.sqlite", "advisor analyze (cold"), 25)
    check("10M NVTX x 10M kernels export cold <= 120 s", _find(rows, "nvtx-10m.sqlite", "advisor analyze (cold"), 120)
    return out


def _target_table(checks: list[tuple[str, str, str]]) -> str:
    head = ["| target | measured | verdict |", "|---|---|---|"]
    return "\n".join(head + [f"| {t} | {m} | {v} |" for t, m, v in checks])


def write_doc(rows: list[Row], out: str, loads: tuple[float, float], done: bool) -> str:
    """Render the table and the targets; write docs/benchmarks.md (also after each input, marked partial)."""
    table = render(rows)
    target_md = _target_table(targets(rows))
    target23_md = _target_table(targets23(rows))
    machine = (f"{platform.machine()}, {os.cpu_count()} cores, {RAM_BYTES / 2**30:.0f} GiB RAM, "
               f"Python {platform.python_version()}; load average {loads[0]:.1f} at start, {loads[1]:.1f} at end "
               "(the machine is shared: compare CPU seconds when wall times look inflated)")
    partial = "" if done else "\n\n**Partial: the run was still going when this was written.**"
    doc = (
        "# Benchmarks\n\nGenerated by `python benchmarks/run.py` (do not edit by hand; the large inputs come from "
        "`python benchmarks/scale.py all`). Each row is one command in its own process: wall time is the median of "
        "the repeats (one run above 200 MB), CPU time is user + system of the process tree, peak RSS the largest "
        "resident set: the larger of wait4 rusage (largest process) and the sum over the process tree sampled "
        "every 50 ms. Ratios divide by `advisor analyze` with an empty cache on the same input. "
        "Peers are stopped after the peer timeout and shown as `> N s (timed out)`; a peer that would need more "
        "RAM than the machine has is skipped with the reason. See docs/performance.md for what the numbers mean."
        f"\n\nMachine: {machine}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.{partial}\n\n{table}\n\n"
        f"## Targets (issue 10)\n\n{target_md}\n\n## Targets (issue 23)\n\n{target23_md}\n"
    )
    Path(out).write_text(doc)
    return table + "\n\n" + target_md + "\n\n" + target23_md


def compiled() -> None:
    """Byte-compile the package first, as `pip install` does: with PYTHONDONTWRITEBYTECODE set (CI images
    often set it) every timed run would otherwise compile each module edited since its last .pyc again, a
    cost no installed copy pays (with no bytecode at all, a 0.24 s warm analyze takes 0.55 s)."""
    import compileall

    for pkg in ("advisor", "parsers", "rules", "reports"):
        if (ROOT / pkg).is_dir():
            compileall.compile_dir(str(ROOT / pkg), quiet=1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", nargs="*", help="trace files (default: the largest shared real fixtures)")
    ap.add_argument("--scaled", type=Path, help=f"also the files benchmarks/scale.py wrote here: {', '.join(SCALED)}")
    ap.add_argument("--repeat", type=int, default=3, help="runs per command on small inputs (1 above 200 MB)")
    ap.add_argument("--with-hta", action="store_true", help="also time HolisticTraceAnalysis (slow)")
    ap.add_argument("--nsys-ai", default="/tmp/nsysai-venv", help="venv holding nsys-ai ('' to skip)")
    ap.add_argument("--peer-timeout", type=float, default=600, help="seconds before a peer is stopped")
    ap.add_argument("--advisor-timeout", type=float, default=1800, help="seconds before advisor is stopped")
    ap.add_argument("--attribution-all", action="store_true", help="time NVTX attribution on JSON inputs too")
    ap.add_argument("--tmp", default=None, help="folder for caches and peer copies (default: system temp)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    if args.tmp:
        Path(args.tmp).mkdir(parents=True, exist_ok=True)
    inputs = [Path(p) for p in args.inputs] if args.inputs is not None else [REAL / p for p in DEFAULT_INPUTS]
    if args.scaled:
        inputs += [args.scaled / n for n in SCALED]
    inputs = [p for p in inputs if p.exists()]
    compiled()
    load0 = os.getloadavg()[0]
    rows: list[Row] = []
    for p in inputs:
        print(f"measuring {p} ...", file=sys.stderr, flush=True)
        rows += rows_for(p, args)
        write_doc(rows, args.out, (load0, os.getloadavg()[0]), done=False)
    print(write_doc(rows, args.out, (load0, os.getloadavg()[0]), done=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
