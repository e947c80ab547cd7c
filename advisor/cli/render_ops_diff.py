"""The diff's `ops` block (per-op achieved TFLOP/s and per-device MFU, before and after) as text and Markdown."""

from __future__ import annotations

from typing import Any

from advisor.cli.render_escape import clean, md_cell
from advisor.reports.units import fmt_ns

TITLE = "Ops: achieved TFLOP/s from recorded shapes (each side's analysis, whole capture)"


def _tf(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}" if v < 100 else f"{v:.0f}"


def _side(r: dict[str, Any] | None, key: str) -> Any:
    return None if r is None else r.get(key)


def _ns(v: int | None) -> str:
    return "-" if v is None else fmt_ns(v)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:g}%"


def _change(r: dict[str, Any]) -> str:
    if r["tflops_ratio"] is not None:
        return f"{r['tflops_ratio']:g}x"
    return str(r["status"])


def _bound(r: dict[str, Any]) -> str:
    b, n = _side(r["base"], "bound"), _side(r["new"], "bound")
    return str(b or n or "-") if b == n or not (b and n) else f"{b} -> {n}"


def _mfu_text(m: dict[str, Any]) -> str:
    b, n = m["base"], m["new"]
    pp = f" ({m['delta_mfu_pp']:+g} pp)" if m["delta_mfu_pp"] is not None else ""
    return (f"{m['device']}: MFU {_pct(_side(b, 'mfu_pct'))} -> {_pct(_side(n, 'mfu_pct'))}{pp}, "
            f"{_tf(_side(b, 'tflops'))} -> {_tf(_side(n, 'tflops'))} TFLOP/s over the device span, "
            f"modelled {_pct(_side(b, 'modelled_pct'))} -> {_pct(_side(n, 'modelled_pct'))} of kernel time")


def ops_text(ops: dict[str, Any] | None) -> list[str]:
    """Lines for `advisor diff` text: one per op (GPU time, TFLOP/s before -> after, the change), then MFU."""
    if ops is None:
        return []
    header = f"   {'GPU time b->n':>23} {'TFLOP/s b->n':>15} {'change':>8} {'% attainable':>15}  op [device]"
    out = [f"{TITLE}:", header]
    for r in ops["items"]:
        b, n = r["base"], r["new"]
        times = f"{_ns(_side(b, 'gpu_ns'))}->{_ns(_side(n, 'gpu_ns'))}"
        rates = f"{_tf(_side(b, 'tflops'))}->{_tf(_side(n, 'tflops'))}"
        att = f"{_pct(_side(b, 'attainable_pct'))}->{_pct(_side(n, 'attainable_pct'))}"
        out.append(f"   {times:>23} {rates:>15} {_change(r):>8} {att:>15}  {clean(r['name'], 60)} [{r['device']}]"
                   f" {_bound(r)}-bound")
    if ops["omitted"]:
        out.append(f"   ... {ops['omitted']} more (--top, or --format json)")
    out += [f"   {_mfu_text(m)}" for m in ops["mfu"]]
    return out


def ops_markdown(ops: dict[str, Any] | None) -> tuple[list[str], list[str], list[str]]:
    """(head, rows, tail) of the Markdown block: the rows may give way to fit a PR comment."""
    if ops is None:
        return [], [], []
    head = ["<details><summary>Ops: achieved TFLOP/s before and after</summary>", "",
            f"_{md_cell(ops['basis'], 400)}._", ""]
    head += [f"- {md_cell(_mfu_text(m), 300)}" for m in ops["mfu"]]
    head += ["", "| op | device | GPU time base | GPU time new | TFLOP/s base | TFLOP/s new | change | "
             "% of attainable | bound |", "|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for r in ops["items"]:
        b, n = r["base"], r["new"]
        rows.append(f"| {md_cell(r['name'], 80)} | {md_cell(r['device'], 40)} | {_ns(_side(b, 'gpu_ns'))} | "
                    f"{_ns(_side(n, 'gpu_ns'))} | {_tf(_side(b, 'tflops'))} | {_tf(_side(n, 'tflops'))} | "
                    f"{_change(r)} | {_pct(_side(b, 'attainable_pct'))} → {_pct(_side(n, 'attainable_pct'))} | "
                    f"{_bound(r)} |")
    omitted = [f"\n_{ops['omitted']} more not shown._"] if ops["omitted"] else []
    return head, rows, omitted + ["", "</details>", ""]
