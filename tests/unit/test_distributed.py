"""The Dask map/reduce gives the same analysis as the single-process path (the cross-rank rows, and with the
rules the whole run document: input facts, summary, verdict, findings, every rule's outcome with its note and
evidence, the ops and mfu sections; only the rules' timings differ): a real LocalCluster of 2 worker processes,
and a scheduler with 2 workers started as separate processes (the `dask scheduler` / `dask worker` command lines)
on localhost; the in-process map on the real 8-rank DLRM capture and on our 2-rank captures. A damaged rank file
is reported by name and the other ranks are still reduced."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dask.distributed")

from advisor import metrics  # noqa: E402
from advisor.api import analyze  # noqa: E402
from advisor.distributed import mapreduce  # noqa: E402
from advisor.ingest import open_run  # noqa: E402
from advisor.model.workarea import temp_area  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RANKS = 4


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows without device ids: a directory read renumbers devices across files, a one-file read keeps the
    local ordinal; everything else must be identical."""
    return [{k: v for k, v in r.items() if k != "device_id"} for r in rows]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import REAL

    tpl = next((REAL / "param" / "dlrm_8rank").glob("worker0_*.json.gz"), None)
    if tpl is None:
        pytest.skip("shared real fixtures absent")
    spec = importlib.util.spec_from_file_location("bench_ranks", ROOT / "benchmarks" / "ranks.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    sys.modules["bench_ranks"] = gen
    spec.loader.exec_module(gen)
    out = tmp_path_factory.mktemp("run")
    gen.generate(tpl, out, gen.Spec(RANKS, {2: 300.0}, offset_us=1000.0, jitter_us=10.0, seed=3))
    return out


ANALYSIS = ("verdict", "headline", "headline_note", "findings")
# the summary sections (advisor.engine.summary), which the Dask path folds from each rank's compact summary
SUMMARY = ("devices", "counts", "capture", "time", "top_kernels", "ranges", "copies", "api", "families")
DASK_KEYS = ("rank_verdicts", "ranks", "failed_ranks")  # what the Dask path adds to a run's document


def _analysis(path: Path) -> dict[str, Any]:
    """The single-process analysis of a directory: the whole run document, as the JSON gives it (tuples as
    lists), without the rules' timings."""
    return _timeless(json.loads(json.dumps(analyze(path).to_dict(), default=str)))


@pytest.fixture(scope="module")
def expected(run_dir: Path) -> dict[str, Any]:
    run = open_run(run_dir)
    return {n: _strip(metrics.query(run, n)) for n in ("rank_clocks", "rank_comm")} | {"analysis": _analysis(run_dir)}


def _files(d: Path) -> list[Path]:
    return sorted(d.glob("*.json.gz"))


def _same(res: mapreduce.RankResult, expected: dict[str, Any]) -> None:
    assert not res.failed
    for name in ("rank_clocks", "rank_comm"):
        assert _strip(res.tables[name]) == expected[name]
    assert max(res.tables["rank_comm"], key=lambda r: r["cost_ns"])["rank"] == 2
    if res.analysis is not None:
        _same_analysis(res, expected["analysis"])


def _same_analysis(res: mapreduce.RankResult, want: dict[str, Any]) -> dict[str, Any]:
    """The Dask path's whole run document equals the directory read's (key by key first: a failure names it)."""
    got = _timeless(json.loads(json.dumps(res.analysis.to_dict(), default=str)))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key
    # something to compare: device verdicts, and findings unless no rule fired (CO002's balanced arm: nothing to fix)
    assert want["verdict"]["devices"] and (want["findings"] or all(r["outcome"] != "fired" for r in want["rules"]))
    assert want["input"]["sha256"] and want["rules"]
    return got


def test_local_cluster_matches_single_process(run_dir: Path, expected: Any, tmp_path: Path) -> None:
    damaged = tmp_path / "run"
    shutil.copytree(run_dir, damaged)
    (damaged / "rank00009.json.gz").write_bytes(b"\x1f\x8b not a trace")
    client = mapreduce.client_for(2, None)
    try:
        assert len(client.scheduler_info()["workers"]) == 2
        # the workers' scratch space is in this process's private temp folder (removed at exit), not Dask's
        # default dask-scratch-space in the system temp dir, which Dask leaves behind
        scratch = client.run(lambda dask_worker: dask_worker.local_directory)
        assert all(Path(d).is_relative_to(temp_area()) for d in scratch.values()), scratch
        _same(mapreduce.analyze_ranks(_files(run_dir), tmp_path / "pq", client, tmp_path / "cache", rules=True),
              expected)
        # our 2-rank capture with recorded shapes on the same cluster: the whole document, ops and mfu included
        d = ROOT / "fixtures" / "kineto" / "CO002_straggler_rank_baseline"
        got = _same_analysis(mapreduce.analyze_ranks(_files(d), tmp_path / "pq3", client, tmp_path / "cache",
                                                     rules=True), _analysis(d))
        assert got["ops"]["items"] and got["mfu"]["ranges"]
        # a damaged rank is reported by name, the others are still reduced
        res = mapreduce.analyze_ranks(_files(damaged), tmp_path / "pq2", client, tmp_path / "cache", rules=True)
        _bounded_in_flight(client)
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    assert list(res.failed) == ["rank00009.json.gz"]
    assert len(res.tables["rank_comm"]) == RANKS
    assert res.analysis is not None and res.analyzed == RANKS


def _square(x: int) -> int:
    return x * x


def _bounded_in_flight(client: Any) -> None:
    """The client never holds more submitted tasks than `in_flight` (2 per worker thread, at least 8): 40 tasks on 2
    single-threaded workers pass through 8 at a time (plus the one just read, whose release Dask completes on
    its event loop), every result arrives, and one failure is named."""
    window = mapreduce.in_flight(client)
    held: list[int] = []
    tasks = [(_square, (i,), f"sq-{i}", f"t{i}") for i in range(40)] + [(_square, ("x",), "sq-bad", "bad")]
    got, failed = mapreduce._gather(client, tasks, lambda *_: held.append(len(client.futures)),
                                    "square")
    assert window == 8
    assert sorted(got) == [i * i for i in range(40)]
    assert list(failed) == ["bad"] and failed["bad"].startswith("TypeError")
    assert len(held) == 41 and max(held) <= window + 1


def test_in_process_path_matches(run_dir: Path, expected: Any, tmp_path: Path) -> None:
    _same(mapreduce.analyze_local(_files(run_dir), tmp_path / "pq", tmp_path / "cache"), expected)


def test_real_8rank_analysis_matches(tmp_path: Path) -> None:
    """param/dlrm_8rank (8 real ranks, distinct processes, no process group recorded): the per-rank map with
    the reduce gives the directory read's findings, verdict and headline; folding the ranks' outcomes in
    another arrival order (reversed, interleaved) gives the same analysis."""
    from tests.conftest import REAL

    d = REAL / "param" / "dlrm_8rank"
    if not d.is_dir():
        pytest.skip("shared real fixtures absent")
    want = _analysis(d)
    res = mapreduce.analyze_local(_files(d), tmp_path / "pq", tmp_path / "cache", rules=True)
    assert not res.failed and res.analyzed == 8
    got = _same_analysis(res, want)
    # independent read: the directory's bytes and files, as the input facts state them
    assert want["input"]["bytes"] == sum(f.stat().st_size for f in d.iterdir() if f.is_file())
    assert want["input"]["notes"]["files"] == [f.name for f in _files(d)]
    # independent read: 8 device verdicts, one per file's distributedInfo.rank
    ranks = sorted(json.loads(gzip.decompress(f.read_bytes()))["distributedInfo"]["rank"] for f in _files(d))
    doc = res.analysis.to_dict()
    assert sorted(d["rank"] for d in doc["verdict"]["devices"]) == ranks == list(range(8))
    # independent read: the kernels and profiler steps every file records
    events = [e for f in _files(d) for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]]
    assert doc["counts"]["kernels"] == sum(e.get("cat") == "kernel" for e in events) > 0
    assert doc["ranges"]["steps"]["count"] == sum(str(e.get("name", "")).startswith("ProfilerStep#") for e in events)
    _any_arrival_order(_files(d), tmp_path, got)


PAIRS = ["CO001_no_comm_compute_overlap_baseline", "CO001_no_comm_compute_overlap_optimized",
         "CO002_straggler_rank_baseline", "CO002_straggler_rank_optimized"]


@pytest.mark.parametrize("name", PAIRS)
def test_captured_pairs_match_with_roofline_basis(name: str, tmp_path: Path) -> None:
    """Our 2-rank DDP captures (recorded shapes: the verdict's basis is the per-op roofline's, its share of every
    rank's kernel time; the ops and mfu sections): the whole run document as a directory read."""
    d = ROOT / "fixtures" / "kineto" / name
    want = _analysis(d)
    res = mapreduce.analyze_local(_files(d), tmp_path / "pq", tmp_path / "cache", rules=True)
    assert not res.failed and res.analyzed == 2
    got = _same_analysis(res, want)
    assert want["verdict"]["basis"].startswith("roofline: ") and want["ops"]["items"] and want["mfu"]["devices"]
    # independent read: the PROVENANCE.json beside the rank files is a member of the input, not a rank
    assert list(want["input"]["notes"]["files_skipped"]) == ["PROVENANCE.json"]
    # independent read: the kernels both rank files record
    events = [e for f in _files(d) for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]]
    assert got["counts"]["kernels"] == sum(e.get("cat") == "kernel" for e in events) > 0


def test_no_rules_facts_match(tmp_path: Path) -> None:
    """`--no-rules` on the Dask path: the facts and sections (input, summary, ops, mfu) with no verdict, findings
    or rule outcomes, the whole document as the directory read's `analyze --no-rules`."""
    d = ROOT / "fixtures" / "kineto" / "CO002_straggler_rank_baseline"
    want = _timeless(json.loads(json.dumps(analyze(d, rules=False).to_dict(), default=str)))
    res = mapreduce.analyze_local(_files(d), tmp_path / "pq", tmp_path / "cache", rules=True, facts_only=True)
    got = _timeless(json.loads(json.dumps(res.analysis.to_dict(), default=str)))
    assert got == want and want["verdict"] is None and want["rules"] == [] and want["ops"]["items"]


SERVING = ("mi300x_sglang_decode/sglang_Qwen3-8B_decode", "mi300x_vllm_decode_fullgraph/graph_execution",
           "mi300x_sglang_decode/sglang_Qwen3-8B_decode", "mi300x_vllm_prefilldecode_piecewise/graph_execution")


def test_serving_ranks_match(tmp_path: Path) -> None:
    """Serving engines' traces as the ranks of one run (SGLang and vLLM decode steps, vLLM CUDA-graph replays;
    in each copy distributedInfo.rank set to its place and its host pids moved apart, as separate processes'
    would be: the SGLang trace is used twice): the Dask path's whole document, the `serving` section included,
    equals the directory read's. Three decode steps over three ranks: the steady state leaves out the run's
    first one only."""
    from tests.conftest import real_path

    d = tmp_path / "run"
    d.mkdir()
    alone = []
    for rank, name in enumerate(SERVING):
        src = real_path(f"tracelens/serving/{name}.json.gz")
        doc = json.loads(gzip.decompress(src.read_bytes()))
        doc["distributedInfo"]["rank"] = rank
        for e in doc["traceEvents"]:
            if isinstance(e.get("pid"), int) and e["pid"] > 64:  # a host process (GPU events: the device ordinal)
                e["pid"] += 1000 * rank
        (d / f"r{rank}.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
        alone.append(analyze(src).sections.serving)
    want = _analysis(d)
    res = mapreduce.analyze_local(_files(d), tmp_path / "pq", tmp_path / "cache", rules=True)
    assert not res.failed and res.analyzed == len(SERVING)
    got = _same_analysis(res, want)["serving"]
    # each file read alone: one step each, graph launches only in the vLLM ones
    assert got["steps_total"] == sum(s.steps_total for s in alone if s is not None) == len(SERVING)
    assert got["graphs"]["launches"] == sum(s.graphs.launches for s in alone if s is not None) > 0
    decode = next(p for p in got["phases"] if p["phase"] == "decode")
    assert (decode["steps"], decode["steady_steps"]) == (3, 2)


def test_directory_read_links_each_ranks_kernels_to_its_own_ops() -> None:
    """Kineto numbers External ids per process from the same start, so a directory read holds each id once per
    rank: a kernel links to the op of its own process (metric op_links). On the straggler capture rank 1 runs
    3x rank 0's batch: its aten::gelu kernels carry rank 1's shapes, as its file records them."""
    d = ROOT / "fixtures" / "kineto" / "CO002_straggler_rank_baseline"
    recorded = {}
    for f in _files(d):
        doc = json.loads(gzip.decompress(f.read_bytes()))
        dims = {json.dumps(e["args"]["Input Dims"]) for e in doc["traceEvents"]
                if e.get("cat") == "cpu_op" and e.get("name") == "aten::gelu"}
        recorded[doc["distributedInfo"]["rank"]] = dims
    assert recorded == {0: {"[[4096, 4096], []]"}, 1: {"[[12288, 4096], []]"}}
    run = open_run(d)
    rank_of = {int(r["device_id"]): int(r["rank"]) for r in metrics.query(run, "device_list")}
    linked: dict[int, set[str]] = {}
    for r in metrics.query(run, "op_kernels"):
        if r["name"] == "aten::gelu":
            linked.setdefault(rank_of[int(r["device_id"])], set()).add(json.dumps(json.loads(r["input_shapes"])))
    assert linked == recorded


def _timeless(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _timeless(v) for k, v in doc.items() if k != "elapsed_s"}
    return [_timeless(v) for v in doc] if isinstance(doc, list) else doc


def _any_arrival_order(files: list[Path], tmp_path: Path, want: dict[str, Any]) -> None:
    """The outcomes folded in arrival orders other than the file order give the file order's analysis."""
    from advisor.distributed.combine import combine
    from advisor.distributed.rankrun import analyze_rank

    cache = str(tmp_path / "cache")
    (tmp_path / "pq3").mkdir()
    sh = mapreduce.shifts(files)
    pairs = list(zip(files, sh, strict=True))
    maps = [mapreduce.map_rank(str(f), str(tmp_path / "pq3"), s, cache, i) for i, (f, s) in enumerate(pairs)]
    plan = mapreduce._planner({str(f): s for f, s in pairs}, cache, None, None)
    red = mapreduce.reduce_ranks(maps, tmp_path / "pq3", plan)
    outs = [analyze_rank(p) for p in red.plans]
    for order in (outs[::-1], outs[1::2] + outs[::2]):
        fold, take = mapreduce._folder(red, None)
        for o in order:
            take(o)
        assert fold.count == len(files)
        got = combine(fold, Path(red.plans[0].seeds), None, None, (files[0].parent, files)).to_dict()
        assert _timeless(json.loads(json.dumps(got, default=str))) == want


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, timeout: float = 60.0) -> None:
    """Until the scheduler listens (a loaded machine takes seconds to start it)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"dask scheduler did not listen on port {port} within {timeout} s")


def test_scheduler_and_workers_as_processes(
    run_dir: Path, expected: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if subprocess.run([sys.executable, "-m", "dask", "--help"], capture_output=True).returncode != 0:
        pytest.skip("dask command line not installed")
    dask = [sys.executable, "-m", "dask"]  # this interpreter: the workers import this checkout's advisor
    addr = f"tcp://127.0.0.1:{_port()}"
    # the scheduler and workers make their scratch space in tmp_path, not in the system temp dir
    env = dict(os.environ, PYTHONPATH=str(ROOT), DASK_TEMPORARY_DIRECTORY=str(tmp_path / "dask"))
    procs = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", addr.rsplit(":", 1)[1],
                               "--no-dashboard"], env=env, stderr=subprocess.DEVNULL)]
    try:
        _wait_for_port(int(addr.rsplit(":", 1)[1]))
        procs += [subprocess.Popen([*dask, "worker", addr, "--nthreads", "1", "--no-dashboard"], env=env,
                                   stderr=subprocess.DEVNULL) for _ in range(2)]
        monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", addr)
        client = mapreduce.client_for(None, None)
        client.wait_for_workers(2, timeout=120)
        try:
            _same(mapreduce.analyze_ranks(_files(run_dir), tmp_path / "pq", client, tmp_path / "cache",
                                          rules=True), expected)
        finally:
            client.close()
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(timeout=10)


def test_cli_analyze_and_diff_on_workers(run_dir: Path, expected: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """`advisor analyze RUN_DIR --workers 2 --format json` prints the single-process document (its envelope:
    schema and advisor versions, inputs, the run's fields at top level and under runs) with the per-rank
    verdicts, cross-rank tables and failed ranks added; the text output is the single-process text with the
    per-rank verdicts after it; `advisor diff RUN_DIR RUN_DIR --workers 2` matches every finding to itself."""
    from advisor.cli.main import main

    assert main(["analyze", str(run_dir), "--format", "json"]) == 0
    single = _timeless(json.loads(capsys.readouterr().out))
    assert main(["analyze", str(run_dir), "--workers", "2", "--format", "json"]) == 0
    doc = _timeless(json.loads(capsys.readouterr().out))
    run = doc["runs"][0]
    assert sorted(r for rs in run["rank_verdicts"].values() for r in rs) == list(range(RANKS))
    assert run["failed_ranks"] == {} and len(run["ranks"]["rank_comm"]) == RANKS
    assert {k: doc[k] for k in DASK_KEYS} == {k: run[k] for k in DASK_KEYS}  # one run: also at top level
    for d in (doc, run):
        for k in DASK_KEYS:
            d.pop(k)
    assert doc == single and doc["schema_version"] and doc["inputs"] == [run["input"]]
    assert run == expected["analysis"] and doc["verdict"] == run["verdict"]
    assert main(["analyze", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert main(["analyze", str(run_dir), "--workers", "2"]) == 0
    dask_text = capsys.readouterr().out
    assert dask_text.startswith(text) and f"{RANKS} ranks matched across collectives" in dask_text[len(text):]
    assert main(["diff", str(run_dir), str(run_dir), "--workers", "2"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert diff["findings"]["new"] == diff["findings"]["resolved"] == diff["findings"]["changed"] == []
    assert diff["findings"]["unchanged"] == len(single["findings"]) > 0


def test_sampled_ranks_verdict_says_the_host_record_is_filtered(tmp_path: Path) -> None:
    """HTA's two event-sampled ranks of one job, read as a run directory: the per-rank map gives the directory
    read's verdict, the note that the host record is filtered included (summed over the ranks' records)."""
    from tests.conftest import real_path

    d = tmp_path / "run"
    d.mkdir()
    for rank in (0, 1):
        shutil.copy(real_path(f"hta/trace_filter__sampled_rank-{rank}.json.gz"), d / f"rank{rank}.json.gz")
    want = _analysis(d)
    res = mapreduce.analyze_local(_files(d), tmp_path / "pq", tmp_path / "cache", rules=True)
    assert not res.failed and res.analyzed == 2
    got = _same_analysis(res, want)
    # independent read: the cpu_op events of both files, all but 8 of which issued GPU work (4 per rank)
    ops = sum(e.get("cat") == "cpu_op" for f in _files(d) for e in json.loads(gzip.decompress(f.read_bytes()))
              ["traceEvents"])
    assert ops == 2329 + 2302
    assert f"4,623 of its {ops:,} framework ops issued GPU work" in got["verdict"]["cause"]
    assert got["verdict"]["confidence"] == "low"
