"""`diff`: compare two sides and assemble the versioned diff document (docs/diff.md).

Every time in the document is in ns and in "base work" units: per step when both sides record steps,
else per capture with the new side scaled by the work ratio (see `align.work`). Every percentage is
an object naming its denominator, as in `analyze`.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

from advisor import __version__
from advisor.diff.align import (
    DevicePair,
    Totals,
    Work,
    activity_totals,
    aligned_ids,
    api_totals,
    count_ratio,
    overlap_share,
    pair_devices,
    range_totals,
    work,
)
from advisor.diff.facts import Capture, is_step_marker
from advisor.diff.identity import program_evidence
from advisor.diff.ops import ops_diff
from advisor.diff.rulefacts import diff_findings
from advisor.diff.sides import Side
from advisor.diff.stats import mean_difference_interval
from advisor.diff.verdict import DEFAULT_THRESHOLD_PCT, Comparability, Verdict, comparability, decide
from advisor.vocab import pct, share

# 1.3: ops; 1.2: verify; 1.1: comparability.program, verdict.interval and verdict.rule, gate.interval
DIFF_SCHEMA_VERSION = "1.4"


def _side_doc(side: Side) -> dict[str, Any]:
    return {
        "label": side.label,
        "layout": side.layout,
        "captures": [
            {"path": c.path, "format": c.format, "tool": c.tool, "tool_version": c.tool_version, "sha256": c.sha256,
             "world_size": c.world_size, "ranks": c.ranks, "host": c.host, "steps": len(c.steps),
             "step_source": c.step_source}
            for c in side.captures
        ],
    }


# ---- the headline metric ---------------------------------------------------------------------


def _metric_samples(caps: list[Capture], ref: dict[tuple[str, str], Totals], w: Work, mode: str,
                    keys: set[str]) -> tuple[list[float], str]:
    """Samples of the headline metric on one side, and what one sample is."""
    if w.basis == "steps":
        if len(caps) == 1:
            return [float(s) for s in caps[0].steps], STEPS_OF_ONE
        return [fmean(c.steps) for c in caps], "captures (mean step time of each)"
    out = []
    for c in caps:
        window = c.gpu_window_ns(aligned_ids(c, mode, keys))
        r = count_ratio(ref, activity_totals([c], mode, keys)) if w.basis == "kernel-counts" else 1.0
        out.append(window / (r or 1.0))
    return out, "captures (GPU time of each, scaled to base work)"


STEPS_OF_ONE = "steps of one capture"


def ci_scope(base_kind: str, new_kind: str) -> str:
    """What the interval's samples vary over: `within-capture` (each side is the steps of one capture, so
    run-to-run variation is not in it), `between-captures` (each sample a capture), or `mixed`."""
    within = (base_kind == STEPS_OF_ONE, new_kind == STEPS_OF_ONE)
    return "within-capture" if all(within) else "mixed" if any(within) else "between-captures"


def _metric(base: Side, new: Side, base_act: dict[tuple[str, str], Totals], w: Work, mode: str,
            keys: set[str]) -> dict[str, Any]:
    sb, what_b = _metric_samples(base.captures, base_act, w, mode, keys)
    sn, what_n = _metric_samples(new.captures, base_act, w, mode, keys)
    if w.basis == "steps":
        name, words = "step time", "step time"
        of = "base mean step time"
    else:
        name, words = "gpu time", "GPU time per unit of work"
        of = "base GPU time (first to last GPU activity over the aligned devices, per capture)"
    if not sb or not sn or not fmean(sb):
        return {"name": name, "words": words, "base_ns": None, "new_ns": None, "delta": None, "ci": None,
                "samples": {"base": len(sb), "new": len(sn)}}
    mb, mn = fmean(sb), fmean(sn)
    ci = None
    if max(len(sb), len(sn)) >= 3:
        iv = mean_difference_interval(sb, sn)
        if iv:
            ci = {"low_ns": round(iv.low), "high_ns": round(iv.high), "low_pct": pct(iv.low, mb),
                  "high_pct": pct(iv.high, mb), "level": iv.level, "method": iv.method, "df": round(iv.df, 2),
                  "of": of, "scope": ci_scope(what_b, what_n)}
    return {
        "name": name, "words": words, "base_ns": round(mb), "new_ns": round(mn), "delta": share(mn - mb, mb, of),
        "ci": ci, "samples": {"base": len(sb), "new": len(sn), "base_kind": what_b, "new_kind": what_n},
    }


# ---- per-item deltas -------------------------------------------------------------------------


def _scales(base: Side, new: Side, w: Work) -> tuple[float, float, str]:
    """Multipliers turning per-capture means into base-work units, and the unit's name."""
    if w.basis == "steps":
        sb = fmean(len(c.steps) for c in base.captures)
        sn = fmean(len(c.steps) for c in new.captures)
        return 1.0 / sb, 1.0 / sn, "per step"
    return 1.0, 1.0 / w.ratio, f"per capture, new scaled to base work (x{1 / w.ratio:.3f})"


def _item(kind: str, key: str, b: Totals | None, n: Totals | None, fb: float, fn: float) -> dict[str, Any]:
    bt = b.total_ns * fb if b else 0.0
    nt = n.total_ns * fn if n else 0.0
    status = "changed" if b and n else ("new" if n else "gone")
    return {
        "kind": kind,
        "key": key,
        "name": (b or n).display_name() if (b or n) else key,  # type: ignore[union-attr]
        "status": status,
        "base": {"count": round(b.count * fb, 3) if b else 0, "total_ns": round(bt),
                 "mean_ns": round(b.mean_ns) if b and b.mean_ns else None},
        "new": {"count": round(n.count * fn, 3) if n else 0, "total_ns": round(nt),
                "mean_ns": round(n.mean_ns) if n and n.mean_ns else None},
        "delta_ns": round(nt - bt),
        "delta": share(nt - bt, bt, "base time of this item"),
        "mean_delta": share((n.mean_ns or 0) - (b.mean_ns or 0), b.mean_ns or 0, "base mean duration per call")
        if b and n and b.mean_ns and n.mean_ns else None,
    }


def _items(base: dict[tuple[str, str], Totals], new: dict[tuple[str, str], Totals], fb: float, fn: float,
           top: int, metric_ns: float | None, metric_of: str) -> dict[str, Any]:
    rows = [_item(k[0], k[1], base.get(k), new.get(k), fb, fn) for k in base.keys() | new.keys()]
    rows.sort(key=lambda r: (-abs(r["delta_ns"]), r["key"]))
    for r in rows:
        r["contribution"] = share(r["delta_ns"], metric_ns or 0, metric_of)
    changed = [r for r in rows if r["status"] == "changed"]
    return {
        "all": rows,  # every row; popped before the document is returned
        "items": rows[:top],
        "omitted": max(0, len(rows) - top),
        "new": [r for r in rows if r["status"] == "new"][:top],
        "gone": [r for r in rows if r["status"] == "gone"][:top],
        "matched": len(changed),
        "new_count": sum(1 for r in rows if r["status"] == "new"),
        "gone_count": sum(1 for r in rows if r["status"] == "gone"),
        "base_total_ns": round(sum(t.total_ns for t in base.values()) * fb),
        "new_total_ns": round(sum(t.total_ns for t in new.values()) * fn),
    }


# ---- the changes, named ----------------------------------------------------------------------

CHANGE_MIN_SHARE = 0.02  # a kernel/memop/range change is named when it moved >= 2% of the base metric
API_MIN_RATIO = 2.0  # a CUDA API call is named when its count per unit changed by 2x or more (or it is new/gone)
MAX_CHANGES = 8


def _count(x: float) -> str:
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def _change(r: dict[str, Any], what: str, unit: str) -> dict[str, Any]:
    """One named change. `what` is the noun before the key (`kernel`, `range`); memcpy/memset keys say it."""
    b, n = r["base"], r["new"]
    key = _short(r["key"], 80) if what == "kernel" else r["key"]
    prefix = "" if r["kind"] in ("memcpy", "memset") else f"{what} "
    if r["kind"] == "gpu_user_annotation":  # Kineto's GPU-side copy of a host annotation: say which one this is
        prefix = f"{what} (GPU-side annotation) "
    if r["status"] == "gone":
        text = f"{prefix}{key} gone ({_ms(b['total_ns'])}, {_count(b['count'])} calls {unit})"
    elif r["status"] == "new":
        text = f"{prefix}{key} new ({_ms(n['total_ns'])}, {_count(n['count'])} calls {unit})"
    else:
        text = (f"{prefix}{key} {_ms(b['total_ns'])} -> {_ms(n['total_ns'])} ({_ms(r['delta_ns'], sign=True)}; "
                f"calls {_count(b['count'])} -> {_count(n['count'])} {unit})")
    return {"what": what, "kind": r["kind"], "key": r["key"], "status": r["status"], "delta_ns": r["delta_ns"],
            "base_count": b["count"], "new_count": n["count"], "text": text}


OVERLAP_MIN_PP = 10.0  # copy/compute overlap is named when its share of the device span moved this much


CONCURRENCY_MIN_RATIO = 1.5  # kernel concurrency (summed / union kernel time) is named when it moved 1.5x


def _overlap_changes(devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies running under kernels, and kernels running at once (streams that stopped or started serializing)."""
    out = []
    for d in devices:
        ratio = d.get("kernel_concurrency_ratio")
        if ratio and max(ratio, 1 / ratio) >= CONCURRENCY_MIN_RATIO:
            b, n = d["base"]["kernel_concurrency"], d["new"]["kernel_concurrency"]
            out.append({"what": "device", "kind": "kernel_concurrency", "key": d["key"],
                        "status": "more" if ratio > 1 else "less", "delta_ns": None, "base_count": b, "new_count": n,
                        "text": f"kernels running at once on {d['key']}: {b:.2f} -> {n:.2f} on average (summed kernel "
                                "time over its union)"})
        pp = (d.get("delta_pp") or {}).get("copy_compute_overlap")
        if pp is None or abs(pp) < OVERLAP_MIN_PP:
            continue
        b, n = d["base"]["copy_compute_overlap"]["pct"], d["new"]["copy_compute_overlap"]["pct"]
        out.append({"what": "device", "kind": "copy_compute_overlap", "key": d["key"],
                    "status": "more" if pp > 0 else "less", "delta_ns": None, "base_count": None, "new_count": None,
                    "text": f"copies overlapping kernels on {d['key']}: {b}% -> {n}% of the device span "
                            f"({pp:+.1f} pp)"})
    return out


def named_changes(kernels: dict[str, Any], ranges: dict[str, Any], api: dict[str, Any],
                  findings: dict[str, Any] | None, metric_ns: float | None, unit: str,
                  devices: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The changes worth naming, in words: kernels/memops/ranges that moved >= 2% of the base metric,
    CUDA API calls whose count changed 2x or more (syncs dropped, graph launches instead of kernel
    launches, allocations gone), copy/compute overlap, and findings resolved or new. GPU work first, ranked by
    |time change|, then ranges, then API counts (by |count change|)."""
    short_unit = "per step" if unit == "per step" else "per capture"
    floor = CHANGE_MIN_SHARE * (metric_ns or 0)
    gpu = [_change(r, r["kind"], short_unit) for r in kernels["all"] if r["delta_ns"] and abs(r["delta_ns"]) >= floor]
    # ranges nest (and CPU ranges hold host time), so they come after the GPU work they contain
    host = [_change(r, "range", short_unit) for r in ranges["all"]
            if r["delta_ns"] and abs(r["delta_ns"]) >= floor and not is_step_marker(r["key"])]
    gpu.sort(key=lambda c: -abs(c["delta_ns"]))
    host.sort(key=lambda c: -abs(c["delta_ns"]))
    calls = []
    for r in api["all"]:
        bc, nc = float(r["base"]["count"]), float(r["new"]["count"])
        if abs(nc - bc) < 1 or (bc and nc and max(bc, nc) / min(bc, nc) < API_MIN_RATIO):
            continue
        c = _change(r, "CUDA API", short_unit)
        c["text"] = (f"CUDA API {r['key']}: {_count(bc)} -> {_count(nc)} calls {short_unit} "
                     f"({_ms(r['base']['total_ns'])} -> {_ms(r['new']['total_ns'])} host time)")
        calls.append(c)
    calls.sort(key=lambda c: -abs(c["new_count"] - c["base_count"]))
    out = gpu[:MAX_CHANGES] + host[: MAX_CHANGES // 2] + calls[:MAX_CHANGES] + _overlap_changes(devices or [])
    if findings:
        for label in ("resolved", "new"):
            for f in findings[label][:3]:
                out.append({"what": "finding", "kind": "finding", "key": f.get("code"), "status": label,
                            "delta_ns": None, "base_count": None, "new_count": None,
                            "text": f"finding {label}: {f.get('code')} {f.get('name') or ''}".rstrip()})
    return out


# ---- devices -----------------------------------------------------------------------------------


def _device_doc(pairs: list[DevicePair]) -> list[dict[str, Any]]:
    out = []
    for p in pairs:
        row: dict[str, Any] = {"key": p.key}
        for side, d in (("base", p.base), ("new", p.new)):
            if d is None:
                row[side] = None
                continue
            of = f"{side} device span (first to last GPU activity on that device)"
            row[side] = {
                "device_id": d.device_id, "rank": d.rank, "local_index": d.local_index, "name": d.name,
                "span_ns": d.span_ns, "busy": share(d.busy_ns, d.span_ns, of), "idle": share(d.idle_ns, d.span_ns, of),
                "kernels": share(d.kernel_ns, d.span_ns, of),
                "communication": share(d.communication_ns, d.span_ns, of), "memcpy": share(d.memcpy_ns, d.span_ns, of),
                "copy_compute_overlap": share(d.copy_overlap_ns, d.span_ns, of),
                "kernel_concurrency": round(d.kernel_concurrency, 3) if d.kernel_concurrency else None,
            }
        if p.base and p.new:
            kb, kn = row["base"]["kernel_concurrency"], row["new"]["kernel_concurrency"]
            row["kernel_concurrency_ratio"] = round(kn / kb, 3) if kb and kn else None
            row["delta_pp"] = {k: _pp(row["new"][k]["pct"], row["base"][k]["pct"])
                               for k in ("busy", "idle", "kernels", "communication", "memcpy",
                                         "copy_compute_overlap")}
        out.append(row)
    return out


def _pp(a: float | None, b: float | None) -> float | None:
    return round(a - b, 1) if a is not None and b is not None else None


# ---- assembly ----------------------------------------------------------------------------------


def _rules_doc(base: Side, new: Side, pairs: list[DevicePair]) -> dict[str, Any]:
    rb, rn = base.rules, new.rules
    bmap = {p.base.device_id: p.key for p in pairs if p.base and p.new}
    nmap = {p.new.device_id: p.key for p in pairs if p.base and p.new}
    notes = sorted({*(rb.notes if rb else ()), *(rn.notes if rn else ())})
    vb = rb.verdict_class if rb else None
    vn = rn.verdict_class if rn else None
    return {
        "findings": diff_findings(rb.findings if rb else None, rn.findings if rn else None, bmap, nmap),
        "findings_from": "the first capture of each side",
        "verdict_class": {"base": vb, "new": vn, "changed": (vb != vn) if vb and vn else None,
                          "base_cause": rb.verdict_cause if rb else None,
                          "new_cause": rn.verdict_cause if rn else None},
        "notes": notes,
    }


def _ops_doc(base: Side, new: Side, pairs: list[DevicePair], top: int) -> dict[str, Any] | None:
    """Per-op TFLOP/s and per-device MFU before and after, read from each side's analysis (advisor/diff/ops.py)."""
    if base.analysis is None or new.analysis is None:
        return None
    bmap = {p.base.device_id: p.key for p in pairs if p.base}
    nmap = {p.new.device_id: p.key for p in pairs if p.new}
    ops = ops_diff(base.analysis.sections, new.analysis.sections, bmap, nmap, top)
    return ops.to_dict() if ops is not None else None


def _headline(v: Verdict, metric: dict[str, Any], changes: list[dict[str, Any]], comp: Comparability,
              w: Work) -> str:
    if not comp.comparable:
        return v.reason
    parts = [f"{v.verdict}: {v.reason}"]
    if metric.get("delta"):
        d = metric["delta"]
        parts.append(f"{metric['words']} {_ms(metric['base_ns'])} -> {_ms(metric['new_ns'])} "
                     f"({d['pct']:+.1f}% of {d['of']} {_ms(d['of_ns'])})")
    if w.basis == "kernel-counts" and abs(w.ratio - 1.0) >= 0.02:
        parts.append(f"new did {w.ratio:.3f}x the base's work per capture; totals are scaled to base work")
    gpu = [c for c in changes if c["what"] in ("kernel", "memcpy", "memset")][:2]
    host = [c for c in changes if c["what"] == "range"][:1]
    named = gpu + host + [c for c in changes if c["what"] not in ("kernel", "memcpy", "memset", "range")][:2]
    if named:
        parts.append("changes: " + "; ".join(c["text"] for c in named))
    return "; ".join(parts)


def _ms(ns: float | None, sign: bool = False) -> str:
    if ns is None:
        return "n/a"
    return f"{ns / 1e6:+.3f} ms" if sign else f"{ns / 1e6:.3f} ms"


def _short(key: str, limit: int = 60) -> str:
    k = key.split("<", 1)[0]
    return k if len(k) <= limit else k[: limit - 1] + "…"


def diff_sides(base: Side, new: Side, threshold_pct: float = DEFAULT_THRESHOLD_PCT, top: int = 15) -> dict[str, Any]:
    """Compare `new` against `base`; the result is the JSON contract documented in docs/diff.md."""
    pairs, mode = pair_devices(base.captures[0], new.captures[0])
    keys = {p.key for p in pairs if p.base and p.new}
    base_act = activity_totals(base.captures, mode, keys)
    new_act = activity_totals(new.captures, mode, keys)
    w = work(base.captures, new.captures, base_act, new_act)
    overlap = overlap_share(base_act, new_act)
    evidence = program_evidence(base.captures, new.captures, base_act, new_act)
    comp = comparability(base.captures, new.captures, pairs, mode, overlap, evidence)
    metric = _metric(base, new, base_act, w, mode, keys)
    fb, fn, unit = _scales(base, new, w)
    metric_of = f"base {metric['words']} ({_ms(metric['base_ns'])})"
    kernels = _items(base_act, new_act, fb, fn, top, metric["base_ns"], metric_of)
    ranges = _items(range_totals(base.captures), range_totals(new.captures), fb, fn, top, metric["base_ns"],
                    metric_of)
    api = _items(api_totals(base.captures), api_totals(new.captures), fb, fn, top, metric["base_ns"], metric_of)
    rules = _rules_doc(base, new, pairs)
    ops = _ops_doc(base, new, pairs, top)
    devices = _device_doc(pairs)
    changes = named_changes(kernels, ranges, api, rules["findings"], metric["base_ns"], unit, devices)
    for block in (kernels, ranges, api):
        block.pop("all")
    delta = metric["delta"]
    ci = metric["ci"]
    v = decide(comp, delta["pct"] if delta else None, (ci["low_pct"], ci["high_pct"]) if ci else None,
               threshold_pct, metric["words"], ci["scope"] if ci else None)
    caveats = list(comp.caveats)
    if not ci:
        caveats.append("no confidence interval: it needs >= 3 steps in a capture or >= 3 captures on a side")
    elif ci["scope"] != "between-captures" and not comp.same_session:
        one = "one capture per side" if ci["scope"] == "within-capture" else "one capture on one side"
        caveats.append(f"the confidence interval is over the steps of {one} (within-capture): it leaves out "
                       "run-to-run variation (two runs of one program can differ by more than their steps do), so "
                       "a change is called only when the whole interval lies beyond the threshold; repeat the "
                       "capture >= 3 times per side for an interval that includes it")
    return {
        "schema_version": DIFF_SCHEMA_VERSION,
        "advisor_version": __version__,
        "base": _side_doc(base),
        "new": _side_doc(new),
        "verdict": {"verdict": v.verdict, "reason": v.reason, "confidence": v.confidence,
                    "threshold_pct": threshold_pct, "interval": ci["scope"] if ci else None,
                    "rule": v.rule, "headline": _headline(v, metric, changes, comp, w)},
        "comparability": {"comparable": comp.comparable, "reasons": comp.reasons, "same_session": comp.same_session,
                          "kernel_overlap": {"base": round(overlap[0], 4), "new": round(overlap[1], 4),
                                             "of": "each side's kernel time (aligned devices)"} if overlap else None,
                          "program": evidence.to_dict()},
        "caveats": caveats,
        "alignment": {"devices_by": mode, "work": {"basis": w.basis, "ratio": round(w.ratio, 4), "detail": w.detail},
                      "unit": unit},
        "metric": metric,
        "devices": devices,
        "kernels": kernels,
        "ranges": ranges,
        "api": api,
        "changes": changes,
        "ops": ops,
        **rules,
    }
