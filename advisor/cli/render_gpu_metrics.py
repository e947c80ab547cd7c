"""Text and Markdown for the `gpu_metrics` section of an analyze document: bound class per NVTX range
from nsys GPU metrics samples (the roofline without Nsight Compute; confidence low)."""

from __future__ import annotations

from advisor import api
from advisor.cli.render_escape import clean, md_cell
from advisor.reports.units import fmt_ns, fmt_pct


def text_gpu_metrics(sec: api.GpuMetrics | None, limit: int = 10) -> list[str]:
    if not sec:
        return []
    if not sec.items:
        return [f"GPU metrics per NVTX range: not available: {clean(sec.missing, 300)}"]
    out = [f"GPU metrics per NVTX range (sampled; % of {sec.of}; confidence {sec.confidence}):"]
    out.append(f"   {'SM active':>9} {'DRAM bw':>8} {'tensor':>7} {'class':<8} {'samples':>7} "
               f"{'range time':>11}  range")
    for it in sec.items[:limit]:
        out.append(
            f"   {fmt_pct(it.sm_active_pct):>9} {fmt_pct(it.dram_pct):>8} {fmt_pct(it.tensor_pct):>7} "
            f"{it.kernel_class:<8} {it.samples:>7,} {fmt_ns(it.total_ns):>11}  "
            f"{clean(it.range, 60)} (device {it.device_id})"
        )
    if sec.ranges_total > min(limit, len(sec.items)):
        out.append(f"   ... {sec.ranges_total - min(limit, len(sec.items))} more (range names x devices) "
                   "in --format json")
    out.append(f"   basis: {sec.basis}")
    return out


def md_gpu_metrics(sec: api.GpuMetrics | None) -> list[str]:
    """A collapsed block (droppable when the comment runs long), like the other detail tables."""
    if not sec:
        return []
    out = ["<details><summary>GPU metrics per NVTX range (sampled, confidence low)</summary>", ""]
    if not sec.items:
        return out + [f"_Not available: {md_cell(sec.missing, 300)}_", "", "</details>", ""]
    out += [f"_Mean of nsys GPU metrics samples over each range, % of {md_cell(sec.of, 120)}. "
            f"Basis: {md_cell(sec.basis, 400)}._", "",
            "| range | device | SM active | DRAM bandwidth | tensor active | class | samples |",
            "|---|---|---|---|---|---|---|"]
    out += [f"| {md_cell(it.range, 100)} | {it.device_id} | {fmt_pct(it.sm_active_pct)} | "
            f"{fmt_pct(it.dram_pct)} | {fmt_pct(it.tensor_pct)} | {md_cell(it.kernel_class)} | {it.samples:,} |"
            for it in sec.items]
    if sec.ranges_total > len(sec.items):
        out += ["", f"_{sec.ranges_total - len(sec.items)} more (range names x devices) in `--format json`._"]
    return out + ["", "</details>", ""]
