"""Text for the `mfu` section of an analyze document (MFU and achieved TFLOP/s per device, step and range,
from the FLOPs the per-op models give the recorded shapes: advisor/perf/mfu.py) and for the `serving`
section (graph replay and serving steps by phase: advisor/perf/serving.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor import api
from advisor.cli.render_escape import clean
from advisor.reports.units import fmt_ns, fmt_pct

if TYPE_CHECKING:  # annotations only: `advisor --help` and `diff` need not load the engine
    from advisor.api import Mfu, Rate, Serving


def _row(r: Rate) -> str:
    tf = "n/a" if r.tflops is None else f"{r.tflops:.2f}"
    cov = "n/a" if r.modelled_pct is None else f"{r.modelled_pct:.0f}%"
    return f"{fmt_pct(r.mfu_pct):>7} {tf:>9} {cov:>8} {fmt_ns(r.span_ns):>11}"


def text_mfu(sec: Mfu | None, limit: int = 5) -> list[str]:
    if sec is None:
        return []
    peaks = ", ".join(f"{p.precision} {p.peak_tflops:g} TFLOP/s" for p in sec.peaks[:4])
    out = [f"MFU from recorded shapes (denominator: each op's precision peak: {peaks or 'no roof'}):",
           f"   {'MFU':>7} {'TFLOP/s':>9} {'modelled':>8} {'time':>11}  window"]
    out += [f"   {_row(d.rate)}  device {d.device_id} span" for d in sec.devices]
    steps = [s.rate for s in sec.steps]
    if steps:
        span, flop = sum(s.span_ns for s in steps), sum(s.flop for s in steps)
        together = api.Rate(span, flop, flop / span / 1e3 if span else None,
                            sum((s.mfu_pct or 0.0) * s.span_ns for s in steps) / span if span else None, None)
        out.append(f"   {_row(together)}  {len(steps)} step(s) together (of {sec.steps_total})")
    out += [f"   {_row(r.rate)}  '{clean(r.name, 60)}' (x{r.count})" for r in sec.ranges[:limit]]
    return out


def text_serving(sec: Serving | None, limit: int = 5) -> list[str]:
    if sec is None:
        return []
    g = sec.graphs
    out = ["Serving:"]
    if g.launches:
        by = ", ".join(f"'{clean(r.launched_by, 60)}' x{r.launches}" for r in g.launched_by[:2])
        out.append(f"   CUDA/HIP graphs: {g.launches} launch(es) replayed {g.kernels} kernels, "
                   f"{g.share.pct}% of kernel time; launched by {by}")
    for p in sec.phases:
        out.append(f"   {p.phase}: {p.steps} step(s), GPU {fmt_ns(p.gpu_span_ns)} (kernels "
                   f"{fmt_ns(p.kernel_ns)}); steady state {p.steady_steps} step(s), mean GPU window "
                   f"{fmt_ns(p.steady_mean_gpu_span_ns)}")
    for st in sec.steps[:limit]:
        out.append(f"   {st.phase or '?':<8} GPU {fmt_ns(st.gpu_span_ns):>11} host {fmt_ns(st.host_ns):>11} "
                   f"graphs {st.graph_kernel_pct}%  {clean(st.name, 60)}")
    return out
