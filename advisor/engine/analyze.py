"""`analyze`: open each input, summarize it, run the rules, and assemble the versioned document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor import __version__
from advisor.engine.findings import classify, run_rules
from advisor.engine.summary import JSON_SCHEMA_VERSION, summarize
from advisor.ingest import drop_entry, open_run
from advisor.model.store import CacheDamaged, Run
from advisor.parsers.base import ParseOptions, ProgressFn, no_progress
from advisor.rules.registry import select_rules


def analyze_run(
    run: Run,
    top: int = 10,
    rules: bool = True,
    rule_options: Mapping[str, Mapping[str, Any]] | None = None,
    select: set[str] | None = None,
    ncu: Run | None = None,
    progress: ProgressFn = no_progress,
) -> dict[str, Any]:
    """Summary of one run plus its verdict, "do this first" headline, ranked findings and rule outcomes.

    ncu: an Nsight Compute run of the same program (analyze --ncu): joined to the timeline `run`,
    it feeds the ncu rules (gains weighted by the matched kernels' timeline time) and the verdict.
    progress: called with (steps done, steps, what) before the summary, the ncu join, each rule and
    the verdict, so a surface can show the analysis stage moving (a cold one takes seconds).
    """
    chosen = select_rules(select) if rules else []
    total = 1 + (ncu is not None) + len(chosen) + (1 if rules else 0)
    done = 0

    def step(what: str) -> None:
        nonlocal done
        progress(done, total, what)
        done += 1

    step("summary")
    doc = summarize(run, top=top)
    joined = None
    if ncu is not None:
        from advisor.engine.ncu import join_section, join_timeline

        step("joining the Nsight Compute report")
        joined = join_timeline(ncu, run)
        doc["ncu"] = join_section(ncu, joined)
    if not rules:
        doc.update(findings=[], verdict=None, headline=None, headline_note=None, rules=[])
        _add_profile(doc, run, [])
        progress(total, total, "done")
        return doc
    report = run_rules(
        run, rule_options, select, ncu=ncu, joined=joined, before_each=lambda r: step(f"rule {r.code} {r.name}")
    )
    step("verdict")
    verdict = classify(run, ncu=joined).to_dict()
    progress(total, total, "done")
    doc["verdict"] = dict(verdict["run"], devices=verdict.get("devices", []), ranges=verdict.get("ranges", []))
    rd = report.to_dict()
    doc["headline"] = headline(doc["verdict"], rd["headline"])
    doc["headline_note"] = headline_note(doc["verdict"], rd["findings"]) if doc["headline"] == rd["headline"] else None
    doc["findings"] = rd["findings"]
    doc["rules"] = rd["rules"]
    _add_profile(doc, run, rd["findings"])
    return doc


# finding category -> the verdict class its fix addresses (ID001's follows the idle cause it prices most)
FIX_CLASS = {"communication": "communication", "compute": "compute", "memory": "memory", "io": "io", "launch": "launch"}
IDLE_FIX_CLASS = {"input": "io", "io": "io", "comm": "communication"}
# rules that fire only on latency-bound kernels (SM and memory both under 60% of peak): their fixes (occupancy,
# grid size) address a `latency` verdict, though the rules sit in the memory category
LATENCY_FIXES = ("ME003", "ME006")


def headline(verdict: dict[str, Any], ranked: str) -> str:
    """The rule report's "do this first" line, unless the verdict names no bottleneck to fix."""
    if verdict.get("class") != "none":
        return ranked
    reason = str(verdict.get("cause") or "").split(":")[0]
    return f"nothing to do first: {reason} (verdict none; findings below are facts, not priorities)"


def headline_note(verdict: dict[str, Any], findings: list[dict[str, Any]]) -> str | None:
    """One line saying why the first fix addresses another class than the verdict's, or None when they agree."""
    named = [str(c) for c in verdict.get("classes") or []]
    if not findings or not named or not findings[0].get("est_gain_ns"):
        return None
    top = findings[0]
    fix_class = _fix_class(top)
    if fix_class is None or fix_class in named or ("latency" in named and top.get("code") in LATENCY_FIXES):
        return None
    same = [f for f in findings if _fix_class(f) in named and f.get("est_gain_ns")]
    best = (
        f"the largest {'/'.join(named)} fix, {same[0]['code']} {same[0]['name']}, saves "
        f"{same[0]['est_gain_ns'] / 1e6:.3f} ms"
        if same else f"no rule prices a {'/'.join(named)} fix on this trace"
    )
    return (
        f"why a {fix_class} fix first on a {verdict.get('class')} verdict: {top['code']} saves the most of any priced "
        f"fix ({top['est_gain_ns'] / 1e6:.3f} ms); {best}"
    )


def _fix_class(finding: dict[str, Any]) -> str | None:
    if finding.get("code") == "ID001":
        cause = next((e["value"] for e in finding.get("evidence", []) if e.get("name") == "top_cause"), "")
        return IDLE_FIX_CLASS.get(str(cause), "launch")
    return FIX_CLASS.get(str(finding.get("category")))


def _add_profile(doc: dict[str, Any], run: Run, findings: list[dict[str, Any]]) -> None:
    """An Nsight Compute report's per-kernel table (`ncu_profile`), with the findings about each kernel."""
    if run.count("ncu_kernels"):
        from advisor.engine.ncu_profile import profile_section

        doc["ncu_profile"] = profile_section(run, findings)


def analyze_paths(paths: Sequence[str], options: ParseOptions | None = None, top: int = 10) -> dict[str, Any]:
    """Library entry point: the analyze document for several inputs.

    A cached run found damaged mid-analysis (CacheDamaged) is dropped and ingested once more.
    """
    runs = []
    for p in paths:
        try:
            runs.append(_analyze_path(p, options, top))
        except CacheDamaged as e:
            drop_entry(e.entry)
            runs.append(_analyze_path(p, options, top))
    return document(runs)


def _analyze_path(path: str, options: ParseOptions | None, top: int) -> dict[str, Any]:
    run = open_run(path, options)
    try:
        return analyze_run(run, top=top)
    finally:
        run.close()


def document(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON contract (docs/json-output.md). With one input, its run's fields are also top-level."""
    doc: dict[str, Any] = {
        "schema_version": JSON_SCHEMA_VERSION,
        "advisor_version": __version__,
        "inputs": [r["input"] for r in runs],
        "runs": runs,
    }
    if len(runs) == 1:
        for key in ("devices", "counts", "capture", "time", "top_kernels", "ranges", "headline", "headline_note",
                    "findings", "verdict", "rules"):
            doc[key] = runs[0][key]
    return doc
