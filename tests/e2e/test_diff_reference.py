"""`advisor diff baseline optimized` on every reference-workload timeline pair in fixtures/ (real H100 / 2 x H200
captures, see docs/reference_workloads.md).

For each pair discovered from fixtures/{nsys,kineto}/*_baseline/PROVENANCE.json the diff must

(a) report `improvement` (the optimized programs are 16-95% faster without a profiler);
(b) name the change the pair was built to show (kernel gone/new/faster, memcpy source kind, CUDA API call counts,
    a range, copy/compute overlap, a finding resolved), with the numbers checked against an independent read of
    the trace (sqlite3 on a gunzipped copy of the nsys export; json counting on the Kineto files);
(c) measure a step-time change that agrees with the harness's own unprofiled timing (PROVENANCE step_time_ms
    medians) within TOLERANCE_PP percentage points.

Pairs that legitimately cannot meet (a) or (c) are listed in EXCEPTIONS with the reason (also in docs/diff.md);
they are still checked, against the harness's timing of the profiled steps (PROVENANCE under_profiler_step_ms).
Nothing is skipped silently: the SPEC table must cover exactly the discovered pairs.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
import shutil
import sqlite3
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from advisor.cli.main import main
from advisor.diff import SideOptions, diff_sides, open_side
from advisor.diff.sides import Side
from tests.conftest import ROOT, nsys_exe

FIXTURES = ROOT / "fixtures"
TIMELINE_FORMATS = ("nsys", "kineto")  # ncu pairs are kernel profiles, not timelines: nothing to step-time

# (c): a profiler adds cost per recorded call (CUPTI activity records, Kineto's per-op events), so the profiled
# baseline of a launch-bound pair is inflated more than its optimized run (the gain widens: LA010, LA005), and a
# small optimized step carries a fixed per-step cost (the gain narrows: IO001 nsys, LA007). Across the pairs that
# stays within 15 percentage points of the unprofiled change; the profiled steps themselves (PROVENANCE
# under_profiler_step_ms, the harness's host clock around the same steps the trace holds) agree within 3 pp.
TOLERANCE_PP = 15.0
PROFILED_TOLERANCE_PP = 3.0
STEP_READ_REL = 0.002  # the engine's mean step time vs the independent read of the same ranges


@dataclass(frozen=True)
class Check:
    """One delta the diff must name. kind: kernel | memcpy | api | range | overlap | concurrency.
    expect: gone | new | fewer (calls per step down by `by`, default half) | faster (time per step down by `by`) |
    more (overlap: at least `by` of the new device span)."""

    kind: str
    name: str
    expect: str
    by: float = 0.0
    exact: bool = False  # name must equal the (normalized) name, not just occur in it


@dataclass(frozen=True)
class Spec:
    checks: tuple[Check, ...]
    what: str  # the change the pair was built to show, in words
    rules: bool = False  # run the rule engine: the pair's rule must be resolved when it fires on the baseline only


def K(name: str, expect: str, by: float = 0.0, exact: bool = False) -> Check:
    return Check("kernel", name, expect, by, exact)


def A(name: str, expect: str) -> Check:
    return Check("api", name, expect, exact=True)


SPEC: dict[str, Spec] = {
    "nsys/CP002_naive_gemm_no_tiling": Spec((K("sgemm_naive", "gone"), K("sgemm_tiled", "new")),
                                            "naive GEMM kernel replaced by a shared-memory tiled one"),
    "nsys/CP003_warp_divergence": Spec((K("by_kind", "faster", 0.5),), "same kernel, 3x faster without divergence"),
    "nsys/IO001_pageable_memcpy": Spec(
        (Check("memcpy", "memcpy HtoD (pageable", "gone"), Check("memcpy", "memcpy HtoD (pinned", "new")),
        "pageable -> pinned host-to-device copies", rules=True),
    "nsys/IO002_no_copy_compute_overlap": Spec((Check("overlap", "copy_compute_overlap", "more", 0.5),),
                                               "copies overlap kernels (chunked multi-stream pipeline)"),
    "nsys/IO003_serial_file_read": Spec((A("cudaStreamSynchronize", "gone"), A("cudaEventSynchronize", "new")),
                                        "per-chunk stream syncs replaced by a double-buffered event pipeline"),
    "nsys/LA001_small_kernel_storm": Spec((A("cudaLaunchKernel", "fewer"), A("cudaGraphLaunch", "new")),
                                          "1000 kernel launches replaced by one CUDA graph launch"),
    "nsys/LA002_sync_in_loop": Spec((A("cudaDeviceSynchronize", "fewer"),), "a sync per kernel -> one per step",
                                    rules=True),
    "nsys/LA003_default_stream_serialization": Spec((Check("concurrency", "kernel_concurrency", "more", 3.0),),
                                                    "blocking streams -> cudaStreamNonBlocking streams: the "
                                                    "8 worker streams' kernels run at once"),
    "nsys/LA004_allocator_churn": Spec((A("cudaFree", "gone"), A("cudaMalloc", "fewer")),
                                       "cudaMalloc/cudaFree per layer -> one preallocated buffer", rules=True),
    "nsys/LA005_relaunch_per_iteration": Spec(
        (K("jacobi", "gone", exact=True), K("jacobi_persistent", "new"), A("cudaLaunchCooperativeKernel", "new"),
         A("cudaLaunchKernel", "fewer")),
        "one launch per solver iteration -> one cooperative persistent kernel"),
    "nsys/ME001_uncoalesced_access": Spec((K("advance_aos", "gone"), K("advance_soa", "new")),
                                          "array-of-structures kernel -> structure-of-arrays kernel"),
    "nsys/ME002_bank_conflicts": Spec((K("transpose", "faster", 0.3),), "same transpose kernel, padded tile"),
    "nsys/ME003_low_occupancy": Spec((K("staged_axpy", "faster", 0.5),), "same kernel, occupancy fixed"),
    "nsys/ME004_register_spills": Spec((K("dense32", "faster", 0.3),), "same kernel, no register spills"),
    "nsys/ME005_unfused_elementwise_chain": Spec(
        (K("ew_fused", "new"), K("ew_bias", "gone"), K("ew_relu", "gone"), K("ew_scale", "gone", exact=True),
         K("ew_scale_residual", "gone")),
        "four elementwise kernels -> one fused kernel"),
    "nsys/ME006_grid_too_small": Spec((K("vadd", "faster", 0.5),), "same kernel, grid sized from the SM count"),
    "nsys/ME007_um_page_faults": Spec((K("block_sums", "faster", 0.5), A("cudaMemPrefetchAsync", "new")),
                                      "page-fault migration -> cudaMemPrefetchAsync"),
    "kineto/CO001_no_comm_compute_overlap": Spec((K("ncclDevKernel_AllReduce", "fewer", 0.4),),
                                                 "per-parameter all-reduce after backward -> DDP bucketed overlap"),
    "kineto/CO002_straggler_rank": Spec((K("ncclDevKernel_AllReduce", "faster", 0.3),),
                                        "uneven split -> even split: the fast rank no longer waits in all-reduce"),
    "kineto/CP001_fp32_gemm_without_tensor_cores": Spec(
        (K("sm80_xmma_gemm_f32f32_f32f32_f32", "gone"), K("tf32", "new")), "FP32 SIMT GEMM -> TF32 tensor-core GEMM"),
    "kineto/CP005_misaligned_gemm_dims": Spec((K("cutlass_75_tensorop_bf16_s1688gemm", "gone"),),
                                              "vocabulary 50,257 -> 50,304: the head's CUTLASS align1 GEMMs -> "
                                              "aligned tensor-core kernels", rules=True),
    "kineto/CP004_composite_training_step": Spec(
        (K("cutlass_80_simt_sgemm", "gone"), K("sm80_xmma_gemm_f32f32_f32f32_f32", "gone"),
         Check("range", "Optimizer.step#AdamW.step", "faster", 0.5), A("cudaStreamSynchronize", "gone")),
        "FP32 GEMMs -> bf16, fused AdamW, no per-step .item() sync", rules=True),
    "kineto/IO001_pageable_memcpy_torch": Spec(
        (Check("memcpy", "memcpy HtoD (pageable", "gone"), Check("memcpy", "memcpy HtoD (pinned", "new")),
        "pageable -> pinned host-to-device copies", rules=True),
    "kineto/IO005_dataloader_stall": Spec((Check("range", "enumerate(DataLoader)", "faster", 0.9),),
                                          "DataLoader on the critical path -> workers + pinned memory", rules=True),
    "kineto/LA006_unbatched_gemm_launches": Spec(
        (K("cutlass_80_simt_sgemm_64x64_8x5_nn_align1", "gone"), A("cudaLaunchKernelExC", "fewer")),
        "one torch.mm launch per item -> one torch.bmm"),
    "kineto/LA007_item_sync_in_loop": Spec((A("cudaStreamSynchronize", "gone"),),
                                           "loss.item() every iteration -> device-side accumulation", rules=True),
    "kineto/LA008_eager_small_op_storm": Spec((A("cudaGraphLaunch", "new"), A("cudaLaunchKernel", "fewer")),
                                              "eager small ops -> torch.compile reduce-overhead (CUDA graphs)"),
    "kineto/LA009_unbatched_decode": Spec((A("cudaLaunchKernel", "fewer"),),
                                          "8 requests decoded one at a time -> one batch"),
    "kineto/LA010_decode_without_cuda_graphs": Spec((A("cudaGraphLaunch", "new"), A("cudaLaunchKernel", "gone")),
                                                    "eager decode step -> replayed CUDA graph"),
    "kineto/LA012_torch_compile_graph_breaks": Spec((A("cudaLaunchKernel", "fewer"),
                                                     Check("range", "## Call CompiledFxGraph", "fewer", 0.8)),
                                                   "graph breaks removed: 32 compiled graphs per step -> 2, the "
                                                   "eager helper's kernels fused into the graphs", rules=True),
    "kineto/LA011_empty_cache_allocator_churn": Spec((A("cudaFree", "gone"), A("cudaMalloc", "gone")),
                                                     "empty_cache() per iteration -> caching allocator left alone",
                                                     rules=True),
    "kineto/ME008_unfused_elementwise_torch": Spec(
        (K("triton_poi_fused", "new"), K("elementwise_kernel", "gone")),
        "eager elementwise chain -> one Triton kernel"),
    "kineto/ME011_nchw_layout_transposes": Spec((K("nchwToNhwcKernel", "gone"), K("channels_last", "new")),
                                                "NCHW -> channels_last: cuDNN's layout conversions gone, PyTorch's "
                                                "NHWC BatchNorm and pooling kernels in", rules=True),
    "kineto/ME009_naive_attention": Spec((K("softmax_warp_forward", "gone"), K("flash", "new")),
                                         "materialized S x S attention -> flash SDPA kernel"),
}

# Pairs that legitimately cannot meet (a) or (c), and why: the verdict they do get, and whether the traced change
# agrees with the unprofiled one. All are still checked against the harness's timing of the profiled steps
# (PROVENANCE under_profiler_step_ms). Mirrored in docs/diff.md.
EXCEPTIONS: dict[str, dict[str, Any]] = {
    "kineto/CO001_no_comm_compute_overlap": {
        "verdict": "inconclusive",
        "agrees": False,
        "why": "profiler overhead reverses the gain (+17.8%, 95% CI [-1.4%, +36.9%]): under Kineto the DDP "
               "variant's per-bucket hooks and 64 DtoD bucket copies per step cost more than the overlap saves "
               "(profiled steps 15.2 -> 17.8 ms, "
               "unprofiled 10.6 -> 8.9 ms)",
    },
    "kineto/CO002_straggler_rank": {
        "verdict": "inconclusive",
        "agrees": True,
        "why": "3 profiled steps, one of the optimized ones slow (13.1, 13.1, 17.2 ms): the 95% interval of the "
               "-18.5% change includes zero; the step-time change agrees with the harness (within tolerance)",
    },
    "kineto/CP005_misaligned_gemm_dims": {
        "verdict": "inconclusive",
        "agrees": False,
        "why": "profiler overhead hides most of the gain: with record_shapes the padded model's step is host-bound "
               "(the GPU waits on the host 27% of its steps), so the 14 ms per step its aligned head GEMMs save "
               "unprofiled shows as -9.8% traced (profiled 39.9 -> 36.0 ms) against -41.0% unprofiled "
               "(34.1 -> 20.1 ms); the named change is the head's three CUTLASS align1 kernels gone",
    },
    "kineto/LA011_empty_cache_allocator_churn": {
        "verdict": "improvement",
        "agrees": False,
        "why": "profiler overhead widens the gain: empty_cache() + cudaMalloc/cudaFree cost ~2x more under Kineto "
               "(profiled baseline 20.4 ms vs 11.1 ms unprofiled): -41.9% traced vs -17.0% unprofiled",
    },
    "kineto/LA012_torch_compile_graph_breaks": {
        "verdict": "improvement",
        "agrees": False,
        "why": "profiler overhead widens the gain: the baseline's eager gaps between its 32 compiled graphs per step "
               "(per-op Kineto records, 102 cache lookups) cost ~3x more under Kineto (profiled baseline 8.6-10.5 ms "
               "vs 3.3 ms unprofiled, optimized 2.4 ms both ways): -74.7% traced vs -29.3% unprofiled",
    },
}


# ---- discovery -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    key: str  # "<format>/<CODE>_<name>"
    fmt: str
    base: Path
    new: Path
    prov: dict[str, Any] = field(hash=False, compare=False)

    @property
    def harness_pct(self) -> float:
        st = self.prov["step_time_ms"]
        b, n = float(st["baseline_median"]), float(st["optimized_median"])
        return 100.0 * (n - b) / b

    def profiled_pct(self) -> float | None:
        b = self.prov.get("under_profiler_step_ms")
        n = json.loads((self.new / "PROVENANCE.json").read_text()).get("under_profiler_step_ms")
        if not b or not n:
            return None
        return 100.0 * (statistics.fmean(n) - statistics.fmean(b)) / statistics.fmean(b)


def discover() -> list[Pair]:
    out = []
    for prov_path in sorted(FIXTURES.glob("*/*_baseline/PROVENANCE.json")):
        prov = json.loads(prov_path.read_text())
        fmt = prov_path.parent.parent.name
        if fmt not in TIMELINE_FORMATS:
            continue
        base = prov_path.parent
        new = base.with_name(base.name[: -len("_baseline")] + "_optimized")
        out.append(Pair(f"{fmt}/{base.name[: -len('_baseline')]}", fmt, base, new, prov))
    return out


PAIRS = discover()
IDS = [p.key for p in PAIRS]


def test_spec_covers_every_pair() -> None:
    """No silent skips: every discovered pair has a spec, and every spec names a pair that exists."""
    assert len(PAIRS) >= 30, f"expected the {len(SPEC)} timeline pairs in SPEC, found {len(PAIRS)}"
    assert set(IDS) == set(SPEC), f"no spec: {sorted(set(IDS) - set(SPEC))}; no pair: {sorted(set(SPEC) - set(IDS))}"
    assert set(EXCEPTIONS) <= set(SPEC)
    for p in PAIRS:
        assert p.new.is_dir() and (p.new / "PROVENANCE.json").is_file(), p.key


# ---- the diffs, once per session ------------------------------------------------------------------


@functools.cache
def sides(key: str) -> tuple[Side, Side]:
    p = next(p for p in PAIRS if p.key == key)
    opts = SideOptions(with_rules=SPEC[key].rules)
    return open_side(str(p.base), opts), open_side(str(p.new), opts)


@functools.cache
def diff(key: str) -> dict[str, Any]:
    b, n = sides(key)
    return diff_sides(b, n, top=10_000)


# ---- independent reads ----------------------------------------------------------------------------

_API_SUFFIX = re.compile(r"_v\d+$")


@dataclass
class Raw:
    """Counts and times straight from the trace files: kind -> name -> [count, ns]; step durations in ns."""

    acts: dict[str, dict[str, list[int]]]
    steps: list[int]


def _sqlite(src: Path, scratch: Path) -> sqlite3.Connection:
    gz = next(src.glob("*.sqlite.gz"))
    dst = scratch / gz.name[: -len(".gz")]
    if not dst.exists():
        with gzip.open(gz, "rb") as f, dst.open("wb") as out:
            shutil.copyfileobj(f, out)
    return sqlite3.connect(f"file:{dst}?mode=ro", uri=True)


def read_nsys(src: Path, scratch: Path) -> Raw:
    """Counted inside the steps: from the first NVTX `step` range's start to the last one's end; a GPU activity
    by the start of the runtime call that launched it (correlationId)."""
    con = _sqlite(src, scratch)
    step_rows = con.execute(
        "SELECT e.start, e.[end] FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
        "WHERE e.eventType = 59 AND coalesce(e.text, s.value) = 'step' ORDER BY e.start").fetchall()
    t0, t1 = step_rows[0][0], step_rows[-1][1]
    launch = dict(con.execute("SELECT correlationId, min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1"))
    acts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))

    def add(kind: str, name: str, corr: int, start: int, end: int) -> None:
        if t0 <= launch.get(corr, start) <= t1:
            a = acts[kind][name]
            a[0] += 1
            a[1] += end - start

    for name, corr, start, end in con.execute("SELECT s.value, x.correlationId, x.start, x.[end] FROM "
                                              "CUPTI_ACTIVITY_KIND_KERNEL x JOIN StringIds s ON s.id = x.shortName"):
        add("kernel", name, corr, start, end)
    copy = {"CUDA_MEMCPY_KIND_HTOD": "HtoD", "CUDA_MEMCPY_KIND_DTOH": "DtoH", "CUDA_MEMCPY_KIND_DTOD": "DtoD",
            "CUDA_MEMCPY_KIND_HTOH": "HtoH"}
    for kind, src_k, dst_k, corr, start, end in con.execute(
            "SELECT o.name, sk.label, dk.label, x.correlationId, x.start, x.[end] FROM CUPTI_ACTIVITY_KIND_MEMCPY x "
            "JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = x.copyKind JOIN ENUM_CUDA_MEM_KIND sk ON sk.id = x.srcKind "
            "JOIN ENUM_CUDA_MEM_KIND dk ON dk.id = x.dstKind"):
        add("memcpy", f"memcpy {copy.get(kind, kind)} ({src_k.lower()} -> {dst_k.lower()})", corr, start, end)
    for name, n, ns in con.execute("SELECT s.value, count(*), sum(r.[end] - r.start) "
                                   "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                                   "WHERE r.start BETWEEN ? AND ? GROUP BY 1", (t0, t1)):
        a = acts["api"][_API_SUFFIX.sub("", name)]
        a[0] += n
        a[1] += ns
    for name, n, ns in con.execute("SELECT coalesce(e.text, s.value), count(*), sum(e.[end] - e.start) "
                                   "FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
                                   "WHERE e.eventType = 59 AND e.start BETWEEN ? AND ? GROUP BY 1", (t0, t1)):
        acts["range"][name] = [n, ns]
    con.close()
    return Raw(acts, [int(e - s) for s, e in step_rows])


def read_kineto(src: Path) -> Raw:
    """All rank files of the capture: counted inside each file's ProfilerStep window (a GPU activity by the start
    of the runtime call that launched it, args.correlation); summed over ranks; a step's time the slowest rank's."""
    acts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    steps: dict[str, int] = {}
    cats = {"kernel": "kernel", "gpu_memcpy": "memcpy", "cuda_runtime": "api", "cuda_driver": "api",
            "user_annotation": "range"}
    for f in sorted(src.glob("*.json.gz")):
        with gzip.open(f, "rt") as fh:
            events = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X" and e.get("cat") in cats]
        marks = [e for e in events if e["cat"] == "user_annotation" and e["name"].startswith("ProfilerStep#")]
        t0 = min(float(e["ts"]) for e in marks)
        t1 = max(float(e["ts"]) + float(e["dur"]) for e in marks)
        launch = {e["args"]["correlation"]: float(e["ts"]) for e in events
                  if cats[e["cat"]] == "api" and "correlation" in e.get("args", {})}
        for e in marks:
            steps[e["name"]] = max(steps.get(e["name"], 0), round(float(e["dur"]) * 1000))
        for e in events:
            kind, name = cats[e["cat"]], e["name"]
            if kind == "range" and name.startswith("ProfilerStep#"):
                continue
            t = launch.get(e.get("args", {}).get("correlation"), float(e["ts"])) if kind in ("kernel", "memcpy") \
                else float(e["ts"])
            if not t0 <= t <= t1:
                continue
            if kind == "memcpy":  # "Memcpy HtoD (Pageable -> Device)"
                name = "memcpy " + name.split(" ", 1)[1].lower().replace("htod", "HtoD").replace(
                    "dtoh", "DtoH").replace("dtod", "DtoD")
            a = acts[kind][name]
            a[0] += 1
            a[1] += round(float(e.get("dur", 0)) * 1000)
    ordered = [steps[k] for k in sorted(steps, key=lambda s: int(s.split("#")[1]))]
    return Raw(acts, ordered)


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("diff-reference-sqlite")


@functools.cache
def _raw(path: str, fmt: str, scratch: str) -> Raw:
    return read_nsys(Path(path), Path(scratch)) if fmt == "nsys" else read_kineto(Path(path))


def raw(p: Pair, side: str, scratch: Path) -> Raw:
    return _raw(str(p.base if side == "base" else p.new), p.fmt, str(scratch))


# ---- (a) verdict ---------------------------------------------------------------------------------


@pytest.mark.parametrize("key", IDS)
def test_verdict_is_improvement(key: str) -> None:
    d = diff(key)
    expected = EXCEPTIONS.get(key, {}).get("verdict", "improvement")
    assert d["verdict"]["verdict"] == expected, (d["verdict"], d["comparability"])
    assert d["comparability"]["comparable"], d["comparability"]["reasons"]
    assert d["alignment"]["work"]["basis"] == "steps" and d["metric"]["name"] == "step time"


# ---- (b) the named change, against an independent read --------------------------------------------


def _matches(name: str, c: Check) -> bool:
    return name == c.name if c.exact else c.name in name


def _doc_rows(d: dict[str, Any], c: Check) -> list[dict[str, Any]]:
    if c.kind == "api":
        rows = d["api"]["items"]
    elif c.kind == "range":
        rows = [r for r in d["ranges"]["items"] if r["kind"] != "gpu_user_annotation"]
    else:
        rows = [r for r in d["kernels"]["items"] if r["kind"] == c.kind]
    return [r for r in rows if _matches(r["key"], c)]


def _raw_total(r: Raw, c: Check) -> tuple[int, int]:
    hits = [v for name, v in r.acts.get(c.kind, {}).items() if _matches(name, c)]
    return sum(v[0] for v in hits), sum(v[1] for v in hits)


def _close(doc_value: float, raw_value: float, rel: float, abs_: float) -> bool:
    return abs(doc_value - raw_value) <= max(abs_, rel * abs(raw_value))


def _check_concurrency(d: dict[str, Any], c: Check, p: Pair, scratch: Path) -> None:
    """Kernels running at once: summed kernel time over the union of kernel intervals, recomputed from sqlite."""
    dev = d["devices"][0]
    for side, src in (("base", p.base), ("new", p.new)):
        con = _sqlite(src, scratch)
        spans = sorted(con.execute("SELECT start, [end] FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall())
        con.close()
        union, cur_s, cur_e = 0, spans[0][0], spans[0][1]
        for s, e in spans[1:]:
            if s > cur_e:
                union, cur_s, cur_e = union + cur_e - cur_s, s, e
            else:
                cur_e = max(cur_e, e)
        union += cur_e - cur_s
        assert dev[side]["kernel_concurrency"] == pytest.approx(sum(e - s for s, e in spans) / union, abs=0.002)
    assert dev["base"]["kernel_concurrency"] < 1.1 and dev["new"]["kernel_concurrency"] >= c.by, dev
    assert any(ch["kind"] == "kernel_concurrency" and ch["status"] == "more" for ch in d["changes"])


def _check_overlap(d: dict[str, Any], c: Check) -> None:
    dev = d["devices"][0]
    b, n = dev["base"]["copy_compute_overlap"]["pct"], dev["new"]["copy_compute_overlap"]["pct"]
    assert b < 5.0 and n >= 100 * c.by, (b, n)  # none in the baseline; at least half the new span overlapped
    # independent: copies under kernels means kernel% + memcpy% of the span exceeds 100% minus idle
    for side in ("base", "new"):
        s = dev[side]
        assert s["kernels"]["pct"] + s["memcpy"]["pct"] - s["busy"]["pct"] == pytest.approx(
            s["copy_compute_overlap"]["pct"], abs=0.3)
    assert any(ch["kind"] == "copy_compute_overlap" for ch in d["changes"])


@pytest.mark.parametrize("key", IDS)
def test_names_the_change(key: str, scratch: Path) -> None:
    p = next(p for p in PAIRS if p.key == key)
    d = diff(key)
    rb, rn = raw(p, "base", scratch), raw(p, "new", scratch)
    sb, sn = len(rb.steps), len(rn.steps)
    assert sb and sn, "no step ranges in the independent read"
    assert d["base"]["captures"][0]["steps"] == sb and d["new"]["captures"][0]["steps"] == sn
    for c in SPEC[key].checks:
        if c.kind == "overlap":
            _check_overlap(d, c)
            continue
        if c.kind == "concurrency":
            _check_concurrency(d, c, p, scratch)
            continue
        (cb, tb), (cn, tn) = _raw_total(rb, c), _raw_total(rn, c)
        rows = _doc_rows(d, c)
        assert rows, f"{c}: no {c.kind} row named like {c.name!r}"
        db = sum(r["base"]["count"] for r in rows)
        dn = sum(r["new"]["count"] for r in rows)
        assert _close(db, cb / sb, 1e-3, 0.01) and _close(dn, cn / sn, 1e-3, 0.01), (c, db, dn, cb / sb, cn / sn)
        if c.kind != "api":  # times: Kineto rounds to 1 ns from fractional microseconds
            tdb = sum(r["base"]["total_ns"] for r in rows)
            tdn = sum(r["new"]["total_ns"] for r in rows)
            assert _close(tdb, tb / sb, 0.01, 2000), (c, tdb, tb / sb)
            assert _close(tdn, tn / sn, 0.01, 2000), (c, tdn, tn / sn)
        if c.expect == "gone":
            assert cb > 0 and cn == 0 and all(r["status"] == "gone" for r in rows), (c, cb, cn)
        elif c.expect == "new":
            assert cb == 0 and cn > 0 and all(r["status"] == "new" for r in rows), (c, cb, cn)
        elif c.expect == "fewer":
            assert cb > 0 and cn / sn <= (1.0 - (c.by or 0.5)) * cb / sb, (c, cb / sb, cn / sn)
        elif c.expect == "faster":
            assert cb > 0 and cn > 0 and tn / sn <= (1.0 - c.by) * tb / sb, (c, tb / sb, tn / sn)
        named = [ch for ch in d["changes"] if ch["key"] is not None and _matches(str(ch["key"]), c)]
        assert named, f"{c} not among the named changes: {[ch['text'] for ch in d['changes']]}"
    assert d["verdict"]["headline"].count("changes:") == 1


@pytest.mark.parametrize("key", [k for k in IDS if SPEC[k].rules])
def test_pair_rule_resolved_when_it_fires(key: str) -> None:
    """The pair's rule: each of its baseline findings (by fingerprint: rule + location) that the optimized run does
    not have is listed as resolved, and named among the changes."""
    b, n = sides(key)
    assert b.rules and n.rules and b.rules.findings is not None and n.rules.findings is not None, b.rules
    rule = next(p for p in PAIRS if p.key == key).prov["rule"]
    in_base = {f.fingerprint for f in b.rules.findings if f.name == rule}
    in_new = {f.fingerprint for f in n.rules.findings if f.name == rule}
    d = diff(key)
    resolved = {f["fingerprint"] for f in d["findings"]["resolved"] if f["name"] == rule}
    assert resolved == in_base - in_new
    if resolved:
        assert any(ch["what"] == "finding" and ch["status"] == "resolved" and ch["key"] for ch in d["changes"])


def test_some_pair_rules_resolve() -> None:
    """Not vacuous: on these captures the rule engine fires on several baselines and the diff resolves them."""
    keys = [k for k in IDS if SPEC[k].rules]
    rule = {p.key: p.prov["rule"] for p in PAIRS}
    hits = [k for k in keys if rule[k] in {f["name"] for f in diff(k)["findings"]["resolved"]}]
    assert len(hits) >= len(keys) // 2, hits


# ---- (c) step-time change vs the harness --------------------------------------------------------


@pytest.mark.parametrize("key", IDS)
def test_step_time_delta_agrees_with_harness(key: str, scratch: Path) -> None:
    p = next(p for p in PAIRS if p.key == key)
    d = diff(key)
    m = d["metric"]
    rb, rn = raw(p, "base", scratch), raw(p, "new", scratch)
    # the engine reads the same steps the file holds
    assert _close(m["base_ns"], statistics.fmean(rb.steps), STEP_READ_REL, 1000)
    assert _close(m["new_ns"], statistics.fmean(rn.steps), STEP_READ_REL, 1000)
    trace_pct = m["delta"]["pct"]
    profiled = p.profiled_pct()
    if profiled is not None:  # the harness's host clock around the profiled steps
        assert abs(trace_pct - profiled) <= PROFILED_TOLERANCE_PP, (trace_pct, profiled)
    if not EXCEPTIONS.get(key, {}).get("agrees", True):
        assert abs(trace_pct - p.harness_pct) > TOLERANCE_PP, f"{key} agrees now: drop it from EXCEPTIONS"
        return
    assert abs(trace_pct - p.harness_pct) <= TOLERANCE_PP, (trace_pct, p.harness_pct)


# ---- A-vs-A --------------------------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    rc = main(["diff", *argv, "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("key", ["nsys/ME005_unfused_elementwise_chain", "kineto/ME009_naive_attention"])
def test_a_vs_a_same_file_is_neutral(key: str, capsys: pytest.CaptureFixture[str]) -> None:
    p = next(p for p in PAIRS if p.key == key)
    rc, d = cli(capsys, str(p.new), str(p.new), "--no-rules", "--fail-on-regression", "0")
    assert rc == 0 and d["verdict"]["verdict"] == "neutral" and "identical inputs" in d["verdict"]["reason"]
    assert d["metric"]["delta"]["pct"] == 0.0 and d["kernels"]["new_count"] == d["kernels"]["gone_count"] == 0
    assert not d["changes"]


def test_a_vs_a_nsys_rep_against_its_export_is_neutral(capsys: pytest.CaptureFixture[str]) -> None:
    """Two containers of one capture (different bytes, one session): the .nsys-rep exported by nsys vs the
    shipped SQLite export. Same steps, same kernels: neutral, and not called cross-format."""
    d0 = FIXTURES / "nsys" / "LA002_sync_in_loop_optimized"
    rc, d = cli(capsys, str(d0 / "LA002_sync_in_loop_optimized.nsys-rep"),
                str(d0 / "LA002_sync_in_loop_optimized.sqlite.gz"), "--no-rules", "--nsys", nsys_exe())
    assert rc == 0 and d["verdict"]["verdict"] == "neutral", d["verdict"]
    assert abs(d["metric"]["delta"]["pct"]) < 0.5 and not any("cross-format" in c for c in d["caveats"])


def test_a_vs_a_ranks_of_a_balanced_run_are_neutral(capsys: pytest.CaptureFixture[str]) -> None:
    """The harness made no repeated captures (one per variant); the nearest real A-vs-A is the two ranks of the
    balanced CO002 run: same program, same moment."""
    d0 = FIXTURES / "kineto" / "CO002_straggler_rank_optimized"
    r0, r1 = sorted(d0.glob("*.rank*.json.gz"))
    rc, d = cli(capsys, str(r0), str(r1), "--no-rules")
    assert rc == 0 and d["verdict"]["verdict"] == "neutral" and "same capture session" in d["verdict"]["reason"]
    assert abs(d["metric"]["delta"]["pct"]) < 5.0


# ---- different programs ------------------------------------------------------------------------------

# pairs with < 50% of kernel time in kernels both ran: the change replaced the hot kernels
KERNEL_REPLACING = [
    "kineto/CP001_fp32_gemm_without_tensor_cores", "kineto/CP004_composite_training_step",
    "kineto/CP005_misaligned_gemm_dims", "kineto/LA006_unbatched_gemm_launches", "kineto/LA008_eager_small_op_storm",
    "kineto/LA009_unbatched_decode", "kineto/LA012_torch_compile_graph_breaks",
    "kineto/ME008_unfused_elementwise_torch", "kineto/ME009_naive_attention", "kineto/ME011_nchw_layout_transposes",
    "nsys/CP002_naive_gemm_no_tiling", "nsys/LA005_relaunch_per_iteration", "nsys/ME001_uncoalesced_access",
    "nsys/ME005_unfused_elementwise_chain",
]
# different workloads still compared (per pair of workloads; the variants of each add up to 17 and 14 capture
# pairs): the same layer sizes, or the same kernels (one DDP model, one training loop, one harness kernel)
SHAPE_TWINS = {
    ("CP001_fp32_gemm_without_tensor_cores", "CP004_composite_training_step"),
    ("CP004_composite_training_step", "ME008_unfused_elementwise_torch"),
    ("IO001_pageable_memcpy_torch", "LA007_item_sync_in_loop"),
    ("LA009_unbatched_decode", "LA010_decode_without_cuda_graphs"),
    ("LA009_unbatched_decode", "LA011_empty_cache_allocator_churn"),
    ("LA010_decode_without_cuda_graphs", "LA011_empty_cache_allocator_churn"),
}
KERNEL_TWINS = {
    ("CO001_no_comm_compute_overlap", "CO002_straggler_rank"),  # one DDP model and its all-reduce
    ("IO002_no_copy_compute_overlap", "IO003_serial_file_read"),  # one harness kernel processes the chunks
    ("LA007_item_sync_in_loop", "LA011_empty_cache_allocator_churn"),  # one MLP training loop
    ("LA009_unbatched_decode", "LA010_decode_without_cuda_graphs"),  # one decode MLP
}
UNRELATED = [
    ("nsys/ME001_uncoalesced_access_optimized", "nsys/ME005_unfused_elementwise_chain_baseline"),
    ("kineto/ME009_naive_attention_baseline", "kineto/CP001_fp32_gemm_without_tensor_cores_optimized"),
    ("kineto/IO001_pageable_memcpy_torch_baseline", "nsys/IO001_pageable_memcpy_optimized"),  # also cross-format
]


@pytest.mark.parametrize(("base", "new"), UNRELATED)
def test_unrelated_programs_are_not_comparable(base: str, new: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Both mark steps and share CUDA API calls (cudaLaunchKernel, cudaDeviceSynchronize), but no kernel, no tensor
    shape and no copy size with related kernel names: not comparable, and the gate does not fail."""
    rc, d = cli(capsys, str(FIXTURES / base), str(FIXTURES / new), "--no-rules", "--fail-on-regression", "5")
    assert rc == 0 and d["verdict"]["verdict"] == "inconclusive", d["verdict"]
    reason = d["verdict"]["reason"]
    assert reason.startswith("not comparable: different workloads")
    assert "nothing else says they are one program" in reason
    assert "CUDA API calls and step markers are in every program and do not count" in reason
    assert not d["comparability"]["program"]["same_program"] and not d["gate"]["failed"]


def test_kernel_replacing_pairs_are_one_program_by_their_data() -> None:
    """The 14 reference pairs with < 50% kernel time in common stay comparable through what they compute on: the
    Kineto ones share the tensor shapes of their framework ops, the nsys ones copy the same sizes and run kernels
    with related names (sgemm_naive / sgemm_tiled)."""
    low = {}
    for key in IDS:
        c = diff(key)["comparability"]
        if min(c["kernel_overlap"]["base"], c["kernel_overlap"]["new"]) < 0.5:
            assert c["comparable"] and c["program"]["same_program"], (key, c)
            low[key] = c["program"]["basis"]
    assert sorted(low) == sorted(KERNEL_REPLACING)
    for key, basis in low.items():
        expected = "share the tensor shapes" if key.startswith("kineto/") else "copy the same sizes"
        assert basis.startswith(expected), (key, basis)
    assert "sgemm" in low["nsys/CP002_naive_gemm_no_tiling"] and "256x64x512" in low[
        "kineto/LA006_unbatched_gemm_launches"]


def test_captures_of_different_workloads_are_rarely_compared() -> None:
    """Every pair of captures of two different reference workloads (2,244 pairs: both formats, both variants): the
    few still compared are named, each with what made it comparable."""
    caps = {(k, v): s for k in IDS for v, s in zip(("baseline", "optimized"), sides(k), strict=True)}
    keys = sorted(caps)
    compared: dict[str, set[tuple[str, str]]] = {"kernels": set(), "shapes": set()}
    pairs = 0
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if a[0] == b[0]:
                continue
            pairs += 1
            c = diff_sides(caps[a], caps[b])["comparability"]
            if not c["comparable"]:
                continue
            ov = c["kernel_overlap"]
            how = "kernels" if min(ov["base"], ov["new"]) >= 0.5 else "shapes"
            assert how == "kernels" or c["program"]["basis"].startswith("share the tensor shapes"), (a, b, c)
            compared[how].add((a[0].split("/")[1], b[0].split("/")[1]))
    assert pairs == 2244
    # the shapes these different workloads share are layer sizes the suite reuses (4096x4096 GEMMs, the decode MLP)
    assert compared["shapes"] == SHAPE_TWINS, compared["shapes"]
    assert compared["kernels"] == KERNEL_TWINS, compared["kernels"]


# ---- the CLI on a couple of pairs ----------------------------------------------------------------


def test_cli_directories_as_sides(capsys: pytest.CaptureFixture[str]) -> None:
    """A fixture directory is one capture: PROVENANCE.json is not a trace, and x.nsys-rep next to x.sqlite.gz is
    one capture (the export is read)."""
    p = next(p for p in PAIRS if p.key == "nsys/IO001_pageable_memcpy")
    rc, d = cli(capsys, str(p.base), str(p.new), "--no-rules", "--fail-on-regression", "5")
    assert rc == 0 and d["verdict"]["verdict"] == "improvement" and not d["gate"]["failed"]
    assert [c["path"].endswith(".sqlite.gz") for c in d["base"]["captures"]] == [True]
    assert d["base"]["captures"][0]["step_source"] == ("nvtx ranges named 'step' (each until the last kernel it "
                                                       "launched ends)")
    assert "memcpy HtoD (pageable -> device) gone" in d["verdict"]["headline"]
    # reversed, the same pair is a regression, and the gate fails
    rc, d = cli(capsys, str(p.new), str(p.base), "--no-rules", "--fail-on-regression", "5")
    assert rc == 1 and d["verdict"]["verdict"] == "regression" and d["gate"]["failed"]


def test_cli_rank_directories_as_one_run(capsys: pytest.CaptureFixture[str]) -> None:
    p = next(p for p in PAIRS if p.key == "kineto/CO002_straggler_rank")
    rc, d = cli(capsys, str(p.base), str(p.new), "--no-rules")
    assert rc == 0 and "one run of 2 rank files" in d["base"]["layout"]
    assert d["alignment"]["devices_by"] == "rank" and len(d["devices"]) == 2
    main(["diff", str(p.base), str(p.new), "--no-rules", "--format", "md"])
    md = capsys.readouterr().out
    assert "ncclDevKernel" in md and md.startswith("## advisor diff")
