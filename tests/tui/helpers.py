"""Builders and drivers for the TUI tests: a small synthetic run, a session over it, screen text."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import pyarrow as pa

from advisor.api import Analysis, analyze_run
from advisor.engine.findings import RuleReport
from advisor.model.store import Run
from advisor.model.validate import conform
from advisor.rules.base import Evidence, Finding, Fix, Window
from advisor.rules.classify import RangeVerdict, RunVerdict, Share, Verdict
from advisor.tui.app import AdvisorApp
from advisor.tui.session import OpenedRun, Session, compare

# Trace names that are Rich markup, or break it: they must show literally and never raise.
MARKUP_NAMES = ("[bold]evil_kernel[/]", "[link=https://example.invalid]click_me[/link]", "[red")
GEMM = "ampere_sgemm_128x64_nn"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long, ncclWork *)"
KERNEL_NAMES = (GEMM, NCCL, *MARKUP_NAMES)
RANGE_NAMES = ("[b]train_step[/b]", "forward", "backward")

MS = 1_000_000


def _table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    return conform(name, pa.Table.from_pylist(rows))


def synthetic_tables(scale: float = 1.0, ncu: bool = False, sha: str = "0" * 64) -> dict[str, pa.Table]:
    """Two GPUs, two streams on GPU 0, launches with NVTX context, idle gaps; optionally ncu data."""
    names = list(KERNEL_NAMES) + list(RANGE_NAMES) + ["cudaLaunchKernel", "cudaStreamSynchronize"]
    sid = {n: i for i, n in enumerate(names)}
    kernels, api = [], []
    t = 1_000 * MS
    corr = 0
    for _step in range(3):
        for i, name in enumerate(KERNEL_NAMES):
            dur = int((2 + i) * MS * (scale if name == GEMM else 1.0))
            corr += 1
            api.append({"pid": 1, "tid": 11, "start_ns": t - MS // 2, "end_ns": t - MS // 4, "api": "cuda_runtime",
                        "name_id": sid["cudaLaunchKernel"], "correlation_id": corr})
            kernels.append({"device_id": i % 2, "stream_id": 7 + int(i == 4),
                            "pid": 1, "start_ns": t, "end_ns": t + dur, "name_id": sid[name], "correlation_id": corr,
                            "grid_x": 128, "grid_y": 1, "grid_z": 1, "block_x": 256, "block_y": 1, "block_z": 1})
            t += dur + MS // 2
        api.append({"pid": 1, "tid": 11, "start_ns": t, "end_ns": t + 4 * MS, "api": "cuda_runtime",
                    "name_id": sid["cudaStreamSynchronize"], "correlation_id": None})
        t += 5 * MS  # an idle gap on both GPUs, covered by a host sync
    ranges = [{"range_id": 0, "parent_id": None, "depth": 0, "source": "nvtx", "name_id": sid[RANGE_NAMES[0]],
               "pid": 1, "tid": 11, "start_ns": 999 * MS, "end_ns": t}]
    mid = (1_000 * MS + t) // 2
    ranges.append({"range_id": 1, "parent_id": 0, "depth": 1, "source": "nvtx", "name_id": sid["forward"],
                   "pid": 1, "tid": 11, "start_ns": 999 * MS, "end_ns": mid})
    ranges.append({"range_id": 2, "parent_id": 0, "depth": 1, "source": "nvtx", "name_id": sid["backward"],
                   "pid": 1, "tid": 11, "start_ns": mid, "end_ns": t})
    memops = [{"device_id": 0, "stream_id": 7, "start_ns": t, "end_ns": t + MS, "op": "memcpy", "copy_kind": "DtoH",
               "bytes": 1 << 20}]
    tables = {
        "strings": _table("strings", [{"string_id": i, "value": n} for n, i in sid.items()]),
        "devices": _table("devices", [{"device_id": d, "rank": d, "name": "NVIDIA H100 80GB HBM3", "vendor": "nvidia"}
                                      for d in (0, 1)]),
        "kernels": _table("kernels", kernels),
        "api_calls": _table("api_calls", api),
        "ranges": _table("ranges", ranges),
        "memops": _table("memops", memops),
    }
    starts = min(999 * MS, kernels[0]["start_ns"])
    tables["runs"] = _table("runs", [{
        "source_path": "synthetic.sqlite", "source_sha256": sha, "source_bytes": 1, "format": "nsys-sqlite",
        "tool": "Nsight Systems", "tool_version": "2099.1", "trace_start_ns": starts, "trace_end_ns": t + MS,
        "captured": "api_calls,devices,kernels,memops,ranges" + (",ncu_kernels,ncu_metrics" if ncu else ""),
    }])
    if ncu:
        tables.update(ncu_tables(sid))
    return tables


def ncu_tables(sid: dict[str, int]) -> dict[str, pa.Table]:
    """One FP32 GEMM launch with the metrics explore.roofline reads, plus a markup-named kernel."""
    metrics = []
    for ncu_id, fma in ((0, 2000.0), (1, 0.0)):
        for metric, value in (
            ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", fma),
            ("smsp__cycles_elapsed.avg.per_second", 1.5e9),
            ("sm__cycles_elapsed.avg.per_second", 1.5e9),
            ("dram__bytes.sum.per_second", 1.0e12),
            ("dram__bytes.sum.peak_sustained", 1280.0),
            ("dram__cycles_elapsed.avg.per_second", 1.5e9),
            ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", 8448.0),
            ("sm__throughput.avg.pct_of_peak_sustained_elapsed", 85.0 if fma else 10.0),
            ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 40.0 if fma else 12.0),
        ):
            metrics.append({"ncu_id": ncu_id, "metric": metric, "value": value})
    return {
        "ncu_kernels": _table("ncu_kernels", [
            {"ncu_id": 0, "device_id": 0, "name_id": sid[GEMM], "duration_ns": 2 * MS},
            {"ncu_id": 1, "device_id": 0, "name_id": sid[MARKUP_NAMES[0]], "duration_ns": MS},
        ]),
        "ncu_metrics": _table("ncu_metrics", metrics),
    }


FINDINGS = (
    Finding("LA001", "small-kernel-storm", "launch", "3 launches of [bold]evil_kernel[/] average 2 us",
            Window(device_id=0, start_ns=1_000 * MS), (Evidence("launches", 3, "count", "[red"),), 6 * MS,
            "launch overhead x count",
            (Fix("Capture the step in a CUDA graph", "torch.cuda.graphs", "safe"),
             Fix("Fuse the elementwise ops", "torch.compile", "changes-numerics")), "device=0"),
    Finding("SY002", "host-sync-in-loop", "idle", "cudaStreamSynchronize every step", Window(), (), 2 * MS,
            "idle time after syncs", (Fix("Drop the .item() call", "", "safe"),), "run"),
)
VERDICT = RunVerdict(
    Verdict("launch", "the GPU waits on the host: launch gaps between short kernels",
            "kernel-name families and the device timeline", "medium",
            (Share("idle_launch", 17 * MS, "device span of device 0", 84_577_114),), ("launch",)),
    # per-range verdicts as analyze puts them (verdict.ranges); "backward" has none
    ranges=(RangeVerdict("[b]train_step[/b]", 1, 80 * MS,
                         Verdict("launch", "[red GPU idle between short kernels", "device timeline", "medium", ())),
            RangeVerdict("forward", 1, 40 * MS,
                         Verdict("compute", "math-bound kernels dominate", "kernel-name families", "high", ()))),
)


def with_findings(a: Analysis) -> Analysis:
    """The synthetic run's analysis with FINDINGS and VERDICT, as the rule engine would hand them over."""
    return replace(a, report=RuleReport((), FINDINGS, 100 * MS), verdict=VERDICT)


def synthetic_session(findings: bool = True, ncu: bool = False, diff: bool = False) -> Session:
    run = Run.from_tables(synthetic_tables(scale=3.0 if diff else 1.0, ncu=ncu))
    a = analyze_run(run, rules=False)
    session = Session(new=OpenedRun("synthetic.sqlite", run, with_findings(a) if findings else a))
    if diff:
        base_run = Run.from_tables(synthetic_tables(scale=0.5, sha="1" * 64))
        session.base = OpenedRun("base.sqlite", base_run, analyze_run(base_run))
        session.diff = compare(session.base, session.new)
    return session


def screen_text(app: AdvisorApp) -> str:
    """What the terminal shows, as plain text lines."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def settle(app: AdvisorApp, pilot: Any, max_rounds: int = 200) -> None:
    """Let messages, timers and query workers finish: until no worker runs and the screen is unchanged.

    A screen's queries chain (the window arrives, then its bins and gaps are fetched), and a resize can
    supersede a fetch; on a loaded machine a fixed number of rounds can end before the last result is
    drawn. So this waits on the state itself: three quiet rounds in a row with the same picture.
    """
    last, quiet = None, 0
    for i in range(max_rounds):
        await pilot.pause(0.02 if i >= 3 else None)
        await app.workers.wait_for_complete()
        await pilot.pause()
        shot = screen_text(app)
        busy = any(w.is_running or w.state.name == "PENDING" for w in app.workers)
        quiet = quiet + 1 if (shot == last and not busy) else 0
        if quiet >= 2:
            return
        last = shot


async def shown_text(app: AdvisorApp, pilot: Any, *texts: str, timeout_s: float = 30.0) -> str:
    """The screen's text once it shows every one of `texts` (or after `timeout_s`): on a loaded machine a quiet
    picture can still be the one before the last refresh."""
    waited, shot = 0.0, screen_text(app)
    while not all(t in shot for t in texts) and waited < timeout_s:
        await pilot.pause(0.05)
        waited += 0.05
        shot = screen_text(app)
    return shot


def drive(app: AdvisorApp, size: tuple[int, int], script: Callable[[Any], Awaitable[None]]) -> None:
    """Run `script(pilot)` against `app` at `size` (no pytest-asyncio needed)."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            await script(pilot)

    asyncio.run(main())


async def wait_loaded(app: AdvisorApp, pilot: Any, timeout_s: float = 120.0) -> None:
    """Wait for the loading worker to open the app's inputs (asserting it did, without error)."""
    waited = 0.0
    while app.session is None and app.error is None and waited < timeout_s:
        await pilot.pause(0.1)
        waited += 0.1
    assert app.error is None, app.error
    assert app.session is not None, "the run did not open in time"
    await settle(app, pilot)


def run_paths(paths: list[str], size: tuple[int, int], script: Callable[[AdvisorApp, Any], Awaitable[None]],
              ncu: str | None = None) -> None:
    """Open `paths` (and an --ncu report) through the loading worker, as `advisor tui` does, then run `script`."""
    app = AdvisorApp(paths, ncu=ncu)

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await wait_loaded(app, pilot)
            await script(app, pilot)

    asyncio.run(main())
