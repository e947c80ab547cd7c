"""`analyze_run`: summarize one run, run the rules, classify it, and assemble the typed `Analysis`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from advisor.engine.findings import RuleReport, classify, finish, rule_calls
from advisor.engine.parallel import in_order
from advisor.engine.result import Analysis, InputFacts, Sections, Summary, load
from advisor.engine.summary import input_info, summarize
from advisor.model.store import Run
from advisor.parsers.base import ProgressFn, no_progress
from advisor.perf.mfu import Mfu, mfu_section
from advisor.perf.ops import ops_section
from advisor.perf.range_verdicts import gpu_metrics_section
from advisor.perf.serving import serving_section
from advisor.rules.base import Finding
from advisor.rules.classify import RunVerdict, Verdict
from advisor.rules.registry import select_rules

# What the rules found on a run, computed once and handed on (a diff side, then its HTML report).
Outcomes = tuple[RuleReport, RunVerdict]


def analyze_run(
    run: Run,
    top: int = 10,
    rules: bool = True,
    rule_options: Mapping[str, Mapping[str, Any]] | None = None,
    select: set[str] | None = None,
    ncu: Run | None = None,
    progress: ProgressFn = no_progress,
    outcomes: Outcomes | None = None,
) -> Analysis:
    """Summary of one run plus its verdict, "do this first" headline, ranked findings and rule outcomes.

    ncu: an Nsight Compute run of the same program (analyze --ncu): joined to the timeline `run`,
    it feeds the ncu rules (gains weighted by the matched kernels' timeline time) and the verdict.
    progress: called with (steps done, steps, what) before the summary, the ncu join, each rule and
    the verdict, so a surface can show the analysis stage moving (a cold one takes seconds).
    outcomes: the rule report and verdict already computed on this run (never run twice).
    """
    chosen = select_rules(select) if rules and outcomes is None else []
    total = 1 + (ncu is not None) + len(chosen) + (1 if chosen else 0)
    done = [0]

    def step(what: str) -> None:
        progress(done[0], total, what)
        done[0] += 1

    sections = Sections()
    joined = None
    if ncu is not None:
        from advisor.engine.ncu import join_section, join_timeline

        step("joining the Nsight Compute report")
        joined = join_timeline(ncu, run)
        sections = Sections(ncu=join_section(ncu, joined))
    # the summary, the verdict, each rule and the computed sections: independent, so two at a time where the run
    # allows it (the two longest first: the rules wait least for the metric tables they share)
    names = ["summary"]
    steps: list[Callable[[], Any]] = [lambda: summarize(run, top=top)]
    if rules and outcomes is None:
        calls = rule_calls(run, rule_options, select, ncu=ncu, joined=joined)
        names += ["verdict"] + [f"rule {r.code} {r.name}" for r, _ in calls]
        steps += [lambda: classify(run, ncu=joined)] + [call for _, call in calls]
    parts = [lambda: gpu_metrics_section(run), lambda: ops_section(run), lambda: _mfu(run),
             lambda: serving_section(run)]
    done_steps = in_order(run if ncu is None else None, steps + parts,
                          lambda i: step(names[i]) if i < len(names) else None)
    facts = done_steps[0]
    if rules and outcomes is None:
        outcomes = finish(done_steps[2:len(steps)], run, ncu), done_steps[1]
    gpu_metrics, ops, mfu, serving = done_steps[len(steps):]
    sections = replace(sections, gpu_metrics=gpu_metrics, ops=ops, mfu=mfu, serving=serving)
    progress(total, total, "done")
    return assemble(run, facts, sections, outcomes if rules else None)


def assemble(run: Run, facts: Mapping[str, Any], sections: Sections, outcomes: Outcomes | None) -> Analysis:
    """The typed analysis from the summary document, the computed sections and the rules' outcomes (None: rules not
    run)."""
    summary = load(Summary, {k: v for k, v in facts.items() if k != "input"})
    report, verdict = outcomes if outcomes is not None else (None, None)
    top = report.headline() if report is not None else None
    line = headline(verdict.run, top) if verdict is not None and top is not None else None
    note = headline_note(verdict.run, report) if report is not None and verdict and line == top else None
    profile = None
    if run.count("ncu_kernels"):  # an Nsight Compute report's launches, with the findings about each
        from advisor.engine.ncu_profile import profile_section

        profile = profile_section(run, report.to_dict()["findings"] if report is not None else [])
    sections = replace(sections, ncu_profile=profile)
    return Analysis(load(InputFacts, input_info(run)), summary, verdict, report, line, note, sections)


def _mfu(run: Run) -> Mfu | None:
    """MFU and achieved TFLOP/s per device, step and range (None: nothing modelled)."""
    from advisor.rules.steps import step_bounds

    return mfu_section(run, lambda: step_bounds(run)) or None


# finding category -> the verdict class its fix addresses (ID001's follows the idle cause it prices most)
FIX_CLASS = {"communication": "communication", "compute": "compute", "memory": "memory", "io": "io", "launch": "launch"}
IDLE_FIX_CLASS = {"input": "io", "io": "io", "comm": "communication"}
# rules that fire only on latency-bound kernels (SM and memory both under 60% of peak): their fixes (occupancy,
# grid size) address a `latency` verdict, though the rules sit in the memory category
LATENCY_FIXES = ("ME003", "ME006")


def headline(verdict: Verdict, ranked: str) -> str:
    """The rule report's "do this first" line, unless the verdict names no bottleneck to fix."""
    cannot = verdict.class_ == "unknown" and str(verdict.cause or "").startswith("cannot judge")
    if verdict.class_ != "none" and not cannot:
        return ranked
    reason = str(verdict.cause or "").split(":")[0]
    return (f"nothing to do first: {reason} (verdict {verdict.class_}; findings below are facts, not "
            "priorities)")


def headline_note(verdict: Verdict, report: RuleReport) -> str | None:
    """One line saying why the first fix addresses another class than the verdict's, or None when they agree or the
    headline names no fix to do first."""
    named = [str(c) for c in verdict.classes]
    findings = report.findings
    if not report.has_first_fix() or not named or not findings[0].est_gain_ns:
        return None
    top = findings[0]
    fix_class = _fix_class(top)
    if fix_class is None or fix_class in named or ("latency" in named and top.code in LATENCY_FIXES):
        return None
    same = [f for f in findings if _fix_class(f) in named and f.est_gain_ns]
    best = (
        f"the largest {'/'.join(named)} fix, {same[0].code} {same[0].name}, saves "
        f"{same[0].est_gain_ns / 1e6:.3f} ms"
        if same else f"no rule prices a {'/'.join(named)} fix on this trace"
    )
    return (
        f"why a {fix_class} fix first on a {verdict.class_} verdict: {top.code} saves the most of any priced "
        f"fix ({top.est_gain_ns / 1e6:.3f} ms); {best}"
    )


def _fix_class(finding: Finding) -> str | None:
    if finding.code == "ID001":
        cause = next((e.value for e in finding.evidence if e.name == "top_cause"), "")
        return IDLE_FIX_CLASS.get(str(cause), "launch")
    return FIX_CLASS.get(str(finding.category))
