#!/usr/bin/env python3
"""Generate docs/reference_workloads.md from the workloads and their fixtures.

Reads every ``reference_workloads/*/workload.toml`` and the PROVENANCE.json files
under ``fixtures/<format>/<CODE>_<name>_<variant>/``; writes the table of pairs
(chapter, pattern, rule, expected class, files, measured gain) between the text
of DOCS_HEAD.md and PENDING.md (edit those for the prose). Rerun after a capture:

    python3 reference_workloads/make_docs.py
"""

from __future__ import annotations

import json
import os
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FIXTURES = os.path.join(REPO, "fixtures")
OUT = os.path.join(REPO, "docs", "reference_workloads.md")


def load(path: str) -> dict | None:
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f)


def pairs() -> list[tuple[str, dict]]:
    out = []
    for d in sorted(os.listdir(HERE)):
        p = os.path.join(HERE, d, "workload.toml")
        if os.path.isfile(p):
            with open(p, "rb") as f:
                out.append((d, tomllib.load(f)))
    return out


def provenance(d: str, spec: dict, variant: str) -> tuple[dict | None, dict[str, list[str]]]:
    files: dict[str, list[str]] = {}
    prov = None
    for fmt in spec["capture"]["formats"]:
        fdir = os.path.join(FIXTURES, fmt, f"{d}_{variant}")
        p = load(os.path.join(fdir, "PROVENANCE.json"))
        if p is None:
            continue
        prov = prov or p
        files[fmt] = sorted(p.get("files", {}))
    return prov, files


def fmt_ms(x) -> str:
    return "" if x is None else (f"{x:.3g}" if x < 10 else f"{x:.1f}")


def main() -> None:
    rows, chapters, devices, total = [], set(), {}, 0
    for d, spec in pairs():
        pb, fb = provenance(d, spec, "baseline")
        po, fo = provenance(d, spec, "optimized")
        exp = spec["expected"]
        cls = f"{exp['baseline_class']} -> {exp.get('optimized_class') or '(not asserted)'}"
        formats = ", ".join(spec["capture"]["formats"])
        if pb:
            st = pb["step_time_ms"]
            chapters.add(spec["chapter"])
            dev = f"{pb['gpu']} x{pb.get('gpus_used', 1)}"
            devices.setdefault(dev, []).append(spec["code"])
            gain = pb.get("measured_gain_pct")
            chk = pb.get("check") or {}
            measured = (
                f"{fmt_ms(st['baseline_median'])} -> {fmt_ms(st['optimized_median'])} ms (**{gain:.0f}%**)"
                if gain is not None
                else "failed"
            )
            status = "captured" + ("" if chk.get("ok", True) else " (CHECKSUM MISMATCH)")
        else:
            measured, status = "", "pending"
        rel = ", ".join(str(c) for c in spec.get("related_chapters", []))
        rows.append(
            f"| [{spec['code']}](../reference_workloads/{d}/README.md) | {spec['chapter']}"
            f"{' (' + rel + ')' if rel else ''} | {spec['title']} | `{spec['rule']['name']}` | {cls} |"
            f" {formats} | {measured} | {status} |"
        )
    for root, _, names in os.walk(FIXTURES):
        total += sum(os.path.getsize(os.path.join(root, n)) for n in names)
    n_pairs = sum(1 for r in rows if r.endswith("captured |"))
    with open(os.path.join(HERE, "DOCS_HEAD.md")) as f:
        head = f.read()
    lines = [
        head,
        "## The pairs",
        "",
        f"{n_pairs} pairs captured, covering chapters "
        f"{', '.join(str(c) for c in sorted(chapters))} ({len(chapters)} chapters). "
        f"Fixtures: {total / 2**20:.1f} MiB in all.",
        "",
        "Devices: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in devices.items()) + ".",
        "",
        "| pair | chapter (also) | pattern: baseline vs optimized | rule the baseline must trigger"
        " | expected class baseline -> optimized | formats | measured step time, no profiler"
        " (gain) | status |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]
    with open(os.path.join(HERE, "PENDING.md")) as f:
        lines.append(f.read())
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {os.path.relpath(OUT, REPO)}: {n_pairs} pairs, {len(chapters)} chapters")


if __name__ == "__main__":
    main()
