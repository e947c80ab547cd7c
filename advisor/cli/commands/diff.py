"""`advisor diff BASE NEW`: did my change make it faster, and why? Exit 1 on a gated regression.

Each side is a trace file, a directory (Kineto rank files of one run, or repeated captures), or a
quoted glob of captures; see docs/diff.md.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.cli.commands.analyze import add_gpu
from advisor.cli.kept import kept_key
from advisor.cli.output import emit, input_paths
from advisor.cli.render import MD_LIMIT
from advisor.cli.render_escape import clean, md_cell, md_code
from advisor.cli.render_ops_diff import ops_markdown, ops_text
from advisor.reports.units import fmt_ns

if TYPE_CHECKING:
    from advisor.api import Side

NAME = "diff"
HELP = "compare two runs (or two sets of repeated captures): what got faster or slower, and why"
NO_PANDAS = True  # pyarrow and DuckDB would load pandas only to probe for it (advisor/cli/nopandas.py)

EXIT_REGRESSION = 1
EXAMPLES = ["advisor diff TRACE TRACE_NEW", "advisor diff TRACE TRACE_NEW --format md -o diff.md",
            "advisor diff TRACE TRACE_NEW --fail-on-regression 5"]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", metavar="BASE", help="baseline: trace file, directory, or quoted glob of captures")
    p.add_argument("new", metavar="NEW", help="candidate: trace file, directory, or quoted glob of captures")
    p.add_argument("--format", choices=("text", "json", "md", "html"), default="text")
    p.add_argument("--fail-on-regression", type=float, metavar="PCT", default=None,
                   help="exit 1 when the verdict is regression and step time (GPU time when there are no steps) "
                        "grew by more than PCT percent of base")
    p.add_argument("--threshold", type=float, metavar="PCT", default=None,
                   help="changes smaller than this percent are neutral (default 5)")
    p.add_argument("--dir-as", choices=("auto", "captures", "ranks"), default="auto",
                   help="how to read a directory of files: auto (different recorded ranks = one run), "
                        "captures (each file a repeated capture), ranks (one multi-rank run)")
    p.add_argument("--step-range", metavar="REGEX",
                   help="NVTX/annotation ranges whose name matches REGEX are the steps (default: ProfilerStep#N)")
    p.add_argument("--top", type=int, default=15, help="how many kernels/ranges to list (default 15)")
    p.add_argument("--no-rules", action="store_true", help="do not run the rule engine (no findings diff)")
    p.add_argument("--nsys", help="nsys executable used to export .nsys-rep/.qdrep (default: nsys on PATH)")
    add_gpu(p)
    p.add_argument("--no-cache", action="store_true", help="parse again instead of reusing the cache")
    p.add_argument("-o", "--output", help="write the output to this file instead of stdout")
    p.add_argument("--workers", type=int, metavar="N",
                   help="BASE and NEW directories of rank traces analyzed as `analyze --workers N` does (Dask, "
                        "one rank per task); findings matched by fingerprint, JSON out")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="as --workers, on an existing Dask cluster (default: DASK_SCHEDULER_ADDRESS)")


def run(args: argparse.Namespace) -> int:
    if args.workers or args.scheduler:
        from advisor.distributed.cli import diff_ranks

        return diff_ranks(args)
    from advisor.api import Kept, keep_output, kept_output
    from advisor.errors import InputError

    for flag, value in (("--fail-on-regression", args.fail_on_regression), ("--threshold", args.threshold)):
        if value is not None and value < 0:
            raise InputError(f"{flag} {value}: must be >= 0", "give a percentage such as 5")
    if args.top < 1:
        raise InputError(f"--top {args.top}: must be >= 1", "give a positive count")
    key = _kept_key(args)
    kept = kept_output(args.base, key) if key is not None else None
    if kept is None:  # not printed before for these inputs, options and code: diff them
        from advisor.api import DEFAULT_THRESHOLD_PCT, ParseOptions, SideOptions, diff_sides, open_side, verify

        opts = SideOptions(dir_as=args.dir_as, step_regex=args.step_range, use_cache=not args.no_cache,
                           with_rules=not args.no_rules, parse=ParseOptions(nsys=args.nsys, gpu=args.gpu))
        threshold = args.threshold if args.threshold is not None else DEFAULT_THRESHOLD_PCT
        sides = open_side(args.base, opts), open_side(args.new, opts)
        doc: dict[str, Any] = diff_sides(*sides, threshold_pct=threshold, top=args.top)
        doc["verify"] = verify(doc)  # predicted vs measured saving per fixed finding (advisor/diff/verify.py)
        doc["gate"] = gate(doc, args.fail_on_regression)
        text = html(doc, sides) if args.format == "html" else render(doc, args.format)
        kept = Kept(text, EXIT_REGRESSION if doc["gate"]["failed"] else 0)
        key = _kept_key(args)  # a side read for the first time has its cache entry now
        if key is not None:
            keep_output(args.base, key, kept.text, kept.code)
    emit(kept.text, args.output, input_paths(args), what=f"{args.format} diff", styled=args.format == "text")
    return kept.code


def _kept_key(args: argparse.Namespace) -> dict[str, Any] | None:
    """The key a diff is kept under in BASE's cache entry (advisor/engine/kept.py): every option, and NEW's entry,
    which names NEW's bytes. None when either side is not one input whose entry holds its bytes now (a glob, a
    directory of repeated captures, a file not read yet or changed since)."""
    from advisor.api import input_identity

    key = kept_key(args, [args.base])
    new = input_identity(args.new) if key is not None else None
    return None if key is None or new is None else dict(key, new_entry=new)


def gate(doc: dict[str, Any], pct: float | None) -> dict[str, Any]:
    """The CI gate's decision, kept in the document so every format shows it."""
    delta = (doc["metric"].get("delta") or {}).get("pct")
    failed = pct is not None and doc["verdict"]["verdict"] == "regression" and delta is not None and delta > pct
    return {"fail_on_regression_pct": pct, "failed": failed, "metric_delta_pct": delta,
            "of": (doc["metric"].get("delta") or {}).get("of"), "interval": doc["verdict"].get("interval")}


def _gate_note(g: dict[str, Any]) -> str:
    """What the gate's interval stands on, when it is not run-to-run spread."""
    interval = g.get("interval")
    if interval in (None, "between-captures"):
        return ""
    return f" (interval {interval}: step-to-step spread, not run-to-run; capture each side 3+ times)"


def render(doc: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2, default=str) + "\n"
    if fmt == "md":
        return markdown(doc)
    return text(doc)


def html(doc: dict[str, Any], sides: tuple[Side, Side]) -> str:
    """The report engineer's comparison page (reports/html.py), fed the diff's rows and verdict.

    Each side's first capture is reported with the rule outcomes its side already holds (no rule runs twice).
    """
    from advisor.api import open_capture, report_inputs
    from advisor.reports.html import DiffRow, FindingChange, render_diff_html

    inputs = []
    for name, side in zip(("base", "new"), sides, strict=True):
        path = doc[name]["captures"][0]["path"]
        inputs.append(report_inputs(path, outcomes=side.rules.outcomes if side.rules else None,
                                    opener=lambda p=path: open_capture(p)))
    rows = [DiffRow(clean(name, 120), before, after, change) for name, before, after, change in html_rows(doc)]
    v = doc["verdict"]
    f = doc.get("findings")
    changes = [FindingChange(status, str(c.get("code") or ""), str(c.get("name") or ""),
                             clean(c.get("message") or "", 200), before, after)
               for status, c, before, after in finding_changes(f)]
    missing = None if f is not None else "not available: the rule engine did not run on one side (--no-rules)"
    page: str = render_diff_html(inputs[0], inputs[1], rows, verdict=f"{v['verdict'].upper()}: {v['headline']}",
                                 findings=changes, findings_missing=missing)
    return page


def finding_changes(f: dict[str, Any] | None) -> list[tuple[str, dict[str, Any], str, str]]:
    """(status, finding, saving before, saving after): new, then resolved, then changed (as the diff ranks them)."""
    if not f:
        return []
    out = [("new", c, "-", fmt_ns(c["est_gain_ns"])) for c in f["new"]]
    out += [("resolved", c, fmt_ns(c["est_gain_ns"]), "-") for c in f["resolved"]]
    out += [("changed", c, fmt_ns(c["base_est_gain_ns"]), fmt_ns(c["est_gain_ns"])) for c in f["changed"]]
    return out


def html_rows(doc: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(quantity, before, after, change) rows: the headline metric, then kernels and ranges by |change|."""
    m = doc["metric"]
    rows = []
    if m.get("delta"):
        rows.append((m["words"], fmt_ns(m["base_ns"]), fmt_ns(m["new_ns"]),
                     f"{fmt_ns(m['delta']['ns'])} ({_pct(m['delta'])} of {m['delta']['of']})"))
    for block, label in ((doc["kernels"], "kernel"), (doc["ranges"], "range")):
        for r in block["items"]:
            rows.append((f"[{label}, {r['status']}] {r['key']}", fmt_ns(r["base"]["total_ns"]),
                         fmt_ns(r["new"]["total_ns"]),
                         f"{fmt_ns(r['delta_ns'])} ({_pct(r['delta'])} of its base time; "
                         f"{doc['alignment']['unit']})"))
    return rows


# ---- text ----------------------------------------------------------------------------------------


def _pct(s: dict[str, Any] | None) -> str:
    if not s or s.get("pct") is None:
        return "n/a"
    return f"{s['pct']:+.1f}%"


def _metric_line(m: dict[str, Any]) -> str:
    d = m.get("delta")
    if not d:
        return f"{m['words']}: not available on both sides"
    line = (f"{m['words']}: {fmt_ns(m['base_ns'])} -> {fmt_ns(m['new_ns'])}, {fmt_ns(d['ns'])} "
            f"({_pct(d)} of {d['of']}, {fmt_ns(d['of_ns'])})")
    ci = m.get("ci")
    if ci:
        line += f"; 95% CI [{ci['low_pct']:+.1f}%, {ci['high_pct']:+.1f}%] ({ci['method']}, df {ci['df']})"
    s = m["samples"]
    return line + f"; samples: base {s['base']}, new {s['new']} ({s.get('base_kind', '')})"


def _text_items(title: str, block: dict[str, Any], unit: str) -> list[str]:
    if not block["items"]:
        return []
    out = [f"{title} ranked by absolute time change ({unit}; delta % of the item's base time; "
           f"contribution % of {block['items'][0]['contribution']['of']}):"]
    out.append(f"   {'delta':>12} {'delta%':>8} {'contrib':>8} {'base':>11} {'new':>11} {'calls b->n':>17}  name")
    for r in block["items"]:
        calls = f"{r['base']['count']:g}->{r['new']['count']:g}"
        out.append(f"   {fmt_ns(r['delta_ns']):>12} {_pct(r['delta']):>8} {_pct(r['contribution']):>8} "
                   f"{fmt_ns(r['base']['total_ns']):>11} {fmt_ns(r['new']['total_ns']):>11} {calls:>17}  "
                   f"[{r['status']}] {clean(r['key'], 70)}")
    if block["omitted"]:
        out.append(f"   ... {block['omitted']} more (--top, or --format json)")
    return out


def _text_devices(devs: list[dict[str, Any]]) -> list[str]:
    out = ["Devices (shares of each side's own device span):"]
    for d in devs:
        b, n = d.get("base"), d.get("new")
        name = clean((b or n or {}).get("name")) or "GPU model not recorded"
        if not (b and n):
            out.append(f"   {d['key']}: only on the {'base' if b else 'new'} side ({name})")
            continue
        pp = d["delta_pp"]
        out.append(f"   {d['key']} ({name}): busy {b['busy']['pct']}% -> {n['busy']['pct']}% ({pp['busy']:+.1f} pp), "
                   f"idle {b['idle']['pct']}% -> {n['idle']['pct']}%, communication {b['communication']['pct']}% -> "
                   f"{n['communication']['pct']}%")
    return out


def _text_rules(doc: dict[str, Any]) -> list[str]:
    out: list[str] = []
    vc = doc["verdict_class"]
    if vc["base"] or vc["new"]:
        out.append(f"Bound by: {vc['base'] or 'n/a'} -> {vc['new'] or 'n/a'}"
                   + (" (changed)" if vc["changed"] else ""))
    f = doc["findings"]
    if f is None:
        out.append("Findings: not compared (" + "; ".join(doc["notes"]) + ")" if doc["notes"] else "Findings: n/a")
        return out
    out.append(f"Findings ({doc['findings_from']}): {len(f['new'])} new, {len(f['resolved'])} resolved, "
               f"{len(f['changed'])} changed, {f['unchanged']} unchanged")
    for label, items in (("new", f["new"]), ("resolved", f["resolved"]), ("changed", f["changed"])):
        for it in items[:5]:
            extra = f" ({fmt_ns(it['delta_est_gain_ns'])} est. gain)" if label == "changed" else ""
            out.append(f"   [{label}] {it['code']} {clean(it['message'], 140)}{extra}")
    return out


def text(doc: dict[str, Any]) -> str:
    v = doc["verdict"]
    lines = [f"== advisor diff: {clean(doc['base']['label'], 120)} -> {clean(doc['new']['label'], 120)}",
             f"   base: {doc['base']['layout']}; new: {doc['new']['layout']}",
             f"VERDICT: {v['verdict'].upper()}: {clean(v['reason'], 400)}",
             f"   confidence: {v['confidence']}; threshold ±{v['threshold_pct']:g}%"]
    g = doc.get("gate") or {}
    if g.get("fail_on_regression_pct") is not None:
        lines.append(f"   CI gate (--fail-on-regression {g['fail_on_regression_pct']:g}%): "
                     + ("FAILED" if g["failed"] else "passed") + _gate_note(g))
    lines.append(_metric_line(doc["metric"]))
    a = doc["alignment"]
    lines.append(f"Alignment: devices by {a['devices_by']}; work by {a['work']['basis']} ({a['work']['detail']})")
    lines += [f"Caveat: {clean(c, 300)}" for c in doc["caveats"]]
    if not doc["comparability"]["comparable"]:
        lines.append("NOTE: the sides are not comparable; the deltas below describe the difference, not a change")
    if doc.get("changes"):
        lines.append(f"What changed ({a['unit']}):")
        lines += [f"   - {clean(c['text'], 200)}" for c in doc["changes"]]
    lines += _text_devices(doc["devices"])
    lines += _text_items("Kernels and memops", doc["kernels"], a["unit"])
    k = doc["kernels"]
    lines.append(f"Kernels: {k['matched']} matched, {k['new_count']} new, {k['gone_count']} gone")
    lines += _text_items("Ranges", doc["ranges"], a["unit"])
    lines += ops_text(doc.get("ops"))
    lines += _text_rules(doc)
    return "\n".join(lines) + "\n"


# ---- Markdown ------------------------------------------------------------------------------------


@dataclass
class _MdBlock:
    """Lines of the comment: fixed `head` and `tail` around `rows` that may be dropped from the end to fit.

    A block opens and closes its own tags (a `<details>` head has its `</details>` in the tail), so
    dropping rows never leaves one open; `cut` counts the rows dropped, and a note says so.
    """

    head: list[str]
    rows: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)
    cut: int = 0

    def lines(self) -> list[str]:
        note = ["", f"_{self.cut} more line(s) left out to fit a PR comment._"] if self.cut else []
        return self.head + self.rows + note + self.tail


def _md_items(block: dict[str, Any], unit: str, head: list[str], tail: list[str]) -> _MdBlock:
    if not block["items"]:
        return _MdBlock(head + ["_none_", ""], tail=tail)
    of = block["items"][0]["contribution"]["of"]
    head = head + [f"_{md_cell(unit, 200)}; delta % of the item's base time; contribution % of {md_cell(of, 200)}._",
                   "", "| delta | delta % | contribution | base | new | calls | status | name |",
                   "|---|---|---|---|---|---|---|---|"]
    rows = [f"| {fmt_ns(r['delta_ns'])} | {_pct(r['delta'])} | {_pct(r['contribution'])} | "
            f"{fmt_ns(r['base']['total_ns'])} | {fmt_ns(r['new']['total_ns'])} | "
            f"{r['base']['count']:g} → {r['new']['count']:g} | {r['status']} | {md_cell(r['key'], 100)} |"
            for r in block["items"]]
    omitted = [f"\n_{block['omitted']} more not shown._"] if block["omitted"] else []
    return _MdBlock(head, rows, omitted + [""] + tail)


def markdown(doc: dict[str, Any]) -> str:
    """GitHub-flavoured Markdown for a PR comment, under GitHub's 65,536-character limit.

    The verdict, the headline metric and the findings always survive a cut: what gives way is table
    rows (ranges first, then kernels, then "what changed" and caveat lines), each block keeping its
    header and closing its own `<details>`, with a note of how many lines it left out.
    """
    v, m = doc["verdict"], doc["metric"]
    icon = {"regression": "🔴", "improvement": "🟢", "neutral": "⚪", "inconclusive": "🟡"}[v["verdict"]]
    head = ["## advisor diff", "",
            f"{icon} **{v['verdict'].upper()}**: {md_cell(v['reason'], 600)}", "",
            f"- base: {md_code(doc['base']['label'])} ({md_cell(doc['base']['layout'], 120)})",
            f"- new: {md_code(doc['new']['label'])} ({md_cell(doc['new']['layout'], 120)})",
            f"- {md_cell(_metric_line(m), 600)}", f"- confidence: {md_cell(v['confidence'])}"]
    g = doc.get("gate") or {}
    if g.get("fail_on_regression_pct") is not None:
        state = "FAILED" if g["failed"] else "passed"
        note = md_cell(_gate_note(g), 200)
        head.append(f"- CI gate (fail above +{g['fail_on_regression_pct']:g}%): **{state}**{note}")
    caveats = _MdBlock([], [f"- caveat: {md_cell(c, 400)}" for c in doc["caveats"]])
    if not doc["comparability"]["comparable"]:
        caveats.tail.append("- **the sides are not comparable**: the deltas below describe the difference, "
                            "not a change")
    changes = _MdBlock(["", "### What changed", ""] if doc.get("changes") else [],
                       [f"- {md_cell(c['text'], 300)}" for c in doc.get("changes") or []])
    unit = doc["alignment"]["unit"]
    kernels = _md_items(doc["kernels"], unit, ["", "### Kernels and memops", ""], [])
    ranges = _md_items(doc["ranges"], unit, ["<details><summary>Ranges</summary>", ""], ["</details>", ""])
    ops = _MdBlock(*ops_markdown(doc.get("ops")))
    findings = _MdBlock(["### Findings and verdict class", ""]
                        + [f"- {md_cell(line.strip(), 300)}" for line in _text_rules(doc)] + [""])
    blocks = [_MdBlock(head), caveats, changes, kernels, ranges, ops, findings]
    return _fit(blocks, [ranges, ops, kernels, changes, caveats])


_MD_CUT = "_(truncated to fit a PR comment; `--format json` has everything)_"


def _fit(blocks: list[_MdBlock], give_way: list[_MdBlock], limit: int = MD_LIMIT) -> str:
    """Join the blocks; over `limit`, drop rows from the end of each `give_way` block in turn until it fits.

    The fixed lines are few and each is length-bounded (md_cell), so dropping rows always suffices.
    """
    def text() -> str:
        return "\n".join(line for b in blocks for line in b.lines()) + "\n"

    out = text()
    if len(out) <= limit:
        return out
    budget = limit - len(_MD_CUT) - 2
    for b in give_way:
        while b.rows and (excess := len(out) - budget) > 0:
            while b.rows and excess > 0:
                excess -= len(b.rows.pop()) + 1
                b.cut += 1
            out = text()  # again: the block's "left out" note has a length too
    return out.rstrip("\n") + "\n\n" + _MD_CUT + "\n"
