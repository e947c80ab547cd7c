"""The rule runner: decides applicability, runs each selected rule, ranks findings by estimated gain.

Applicability is the engine's call, not the rule's: a table the capture did not record, or
recorded empty, makes the rule NotApplicable with the reason and how to capture it, so a report
never mixes "no problem" with "could not look". Findings are ranked by `est_gain_ns`; the first one
is the "do this first" line, and its saving is put against the longest device span (named as the
denominator).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from advisor import metrics
from advisor.engine.parallel import in_order
from advisor.engine.ranks import across_ranks, device_ranks
from advisor.errors import InputError
from advisor.interrupt import raise_if_interrupted
from advisor.model.schema import TABLES
from advisor.model.store import Run
from advisor.rules.base import (
    CAPTURE_HINTS,
    Clean,
    Context,
    Finding,
    Fired,
    NotApplicable,
    OptionValue,
    Outcome,
    Rule,
    ms,
)
from advisor.rules.catalog import RuleInfo, explain, list_rules
from advisor.rules.classify import RunVerdict, classify
from advisor.rules.registry import all_rules, select_rules
from advisor.vocab import pct

if TYPE_CHECKING:  # the join (and its roofline imports) load only when an ncu run is given
    from advisor.perf.ncu_join import JoinResult

__all__ = [
    "RuleInfo",
    "RuleReport",
    "RuleResult",
    "RunVerdict",
    "classify",
    "explain",
    "list_rules",
    "resolve_options",
    "run_rules",
]

SPAN_OF = "longest device span (first to last GPU activity on one device, or its marked steps where they reach further)"
# A finding saving less than this share of the span is listed, never put forward as "do this first".
HEADLINE_MIN_PCT = 1.0
NCU_SPAN_OF = "profiled kernel time in this Nsight Compute report (sum of launch durations)"


@dataclass(frozen=True)
class RuleResult:
    """What one rule did on this run."""

    code: str
    name: str
    category: str
    status: str
    outcome: Outcome | None
    elapsed_s: float  # wall s from the rule's start to its end; beside another step, waits for its tables included
    error: str | None = None

    @property
    def kind(self) -> str:
        return "error" if self.outcome is None else self.outcome.kind

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.outcome.findings if isinstance(self.outcome, Fired) else ()

    def line(self) -> str:
        """One line for text output: `IO001 pageable-memcpy: not applicable: ...; capture with ...`."""
        head = f"{self.code} {self.name}: "
        o = self.outcome
        if o is None:
            return head + f"error: {self.error}"
        if isinstance(o, NotApplicable):
            return (
                head
                + f"not applicable: {o.reason}"
                + (f"; capture with {o.how_to_capture}" if o.how_to_capture else "")
            )
        if isinstance(o, Clean):
            return head + "clean" + (f": {o.note}" if o.note else "")
        return head + f"fired ({len(o.findings)} finding{'s' if len(o.findings) != 1 else ''})"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "category": self.category,
            "status": self.status,
            "outcome": self.kind,
            "elapsed_s": round(self.elapsed_s, 4),
        }
        o = self.outcome
        if o is None:
            d["error"] = self.error
        elif isinstance(o, NotApplicable):
            d.update(reason=o.reason, how_to_capture=o.how_to_capture)
        elif isinstance(o, Clean):
            d.update(note=o.note, evidence=[e.to_dict() for e in o.evidence])
        else:
            d["findings"] = len(o.findings)
        return d


@dataclass(frozen=True)
class RuleReport:
    """Per-rule results and all findings, ranked by estimated gain (largest first)."""

    results: tuple[RuleResult, ...]
    findings: tuple[Finding, ...]
    span_ns: int
    span_of: str = SPAN_OF

    def result(self, code: str) -> RuleResult:
        for r in self.results:
            if r.code == code:
                return r
        raise KeyError(code)

    def has_first_fix(self) -> bool:
        """Whether the headline names a fix to do first: the top finding saves HEADLINE_MIN_PCT of the span."""
        return bool(self.findings) and pct(self.findings[0].est_gain_ns, self.span_ns, 0.0) >= HEADLINE_MIN_PCT

    def headline(self) -> str:
        """'do this first, expected to save X ms of Y ms (Z% of <denominator>)', or why there is none."""
        if not self.findings:
            return "no findings: nothing the rules check for stands out in this trace"
        top = self.findings[0]
        share = pct(top.est_gain_ns, self.span_ns, 0.0)
        if share < HEADLINE_MIN_PCT:
            largest = (
                f"the largest, {top.code} {top.name}, {ms(top.est_gain_ns)}" if top.est_gain_ns else "they state facts"
            )
            return (
                f"no fix to do first: no finding saves {HEADLINE_MIN_PCT:g}% of the {self.span_of} "
                f"({len(self.findings)} finding(s); {largest})"
            )
        return (
            f"do this first: {top.fixes[0].title if top.fixes else top.name} ({top.code} {top.name}), "
            f"expected to save {ms(top.est_gain_ns)} of {ms(self.span_ns)} ({share}% of the {self.span_of})"
        )

    def gain_pct(self, f: Finding) -> float:
        """A finding's estimated saving, percent of `span_of` (the JSON's `gain_pct`)."""
        return pct(f.est_gain_ns, self.span_ns, 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline(),
            "span_ns": self.span_ns,
            "span_of": self.span_of,
            "findings": [f.to_dict() | {"gain_pct": self.gain_pct(f), "gain_pct_of": self.span_of}
                         for f in self.findings],
            "rules": [r.to_dict() for r in self.results],
        }


def resolve_options(
    rules: Iterable[type[Rule]], options: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, dict[str, OptionValue]]:
    """Defaults overlaid with user options, type-checked; unknown codes or names are InputError."""
    by_code = {r.code: r for r in all_rules()}
    given = {k.upper(): v for k, v in (options or {}).items()}
    for code, opts in given.items():
        rule = by_code.get(code)
        if rule is None:
            raise InputError(f"options given for unknown rule {code!r}", "see `advisor rules` for codes")
        for name in opts:
            if name not in rule.options:
                known = ", ".join(sorted(rule.options)) or "none"
                raise InputError(f"{code} has no option {name!r}", f"its options: {known}")
    resolved: dict[str, dict[str, OptionValue]] = {}
    for rule in rules:
        values: dict[str, OptionValue] = {}
        for name, opt in rule.options.items():
            raw = given.get(rule.code, {}).get(name, opt.default)
            try:
                values[name] = opt.coerce(raw)
            except ValueError as e:
                raise InputError(f"option {rule.code}.{name}: {e}", opt.help) from None
        resolved[rule.code] = values
    return resolved


def captured_tables(run: Run) -> set[str]:
    """Tables the capture recorded; a run built without a runs row counts its non-empty tables."""
    return run.captured or {t for t in TABLES if t != "runs" and run.count(t)}


def _applicability(rule: type[Rule], run: Run, captured: set[str]) -> NotApplicable | None:
    for table in sorted(rule.requires):
        hint = CAPTURE_HINTS.get(table, "")
        if table not in captured:
            return NotApplicable(f"the capture did not record {table}", hint)
        if run.count(table) == 0:
            return NotApplicable(f"the capture recorded no {table}", hint)
    return None


def _run_one(
    rule: type[Rule],
    run: Run,
    opts: dict[str, OptionValue],
    captured: set[str],
    strict: bool,
    timeline: JoinResult | None = None,
    with_ncu: bool = False,
) -> RuleResult:
    t0 = time.perf_counter()
    outcome: Outcome | None
    error = None
    try:
        outcome = _applicability(rule, run, captured)
        if outcome is None:
            ctx = Context(run, opts, timeline=timeline, with_ncu=with_ncu)
            instance = rule()
            outcome = instance.applies(ctx) or instance.check(ctx)
    except InputError:
        raise
    except Exception as e:  # one broken rule must not sink the report; strict mode re-raises
        raise_if_interrupted(e)  # Ctrl-C inside a query is no rule failure: the run stops (exit 130)
        if strict:
            raise
        outcome, error = None, f"{type(e).__name__}: {e}"
    return RuleResult(rule.code, rule.name, rule.category, rule.status, outcome, time.perf_counter() - t0, error)


def run_span_ns(run: Run) -> int:
    """The longest device span: the denominator of the headline's percentage."""
    if not run.count("kernels") and not run.count("memops"):
        return 0
    row = metrics.one(run, "span_max")
    return int(row.get("span_ns") or 0)


def run_span(run: Run) -> tuple[int, str]:
    """The headline's denominator and its name: the longest device span, or for an Nsight Compute
    report (no timeline) the profiled kernel time, which is what the ncu rules' gains are part of."""
    span = run_span_ns(run)
    if span or not run.count("ncu_kernels"):
        return span, SPAN_OF
    return int(metrics.one(run, "ncu_kernel_time")["duration_ns"]), NCU_SPAN_OF


def reads_ncu(rule: type[Rule]) -> bool:
    """A rule that reads only Nsight Compute tables (runs on the ncu run when one is joined)."""
    return bool(rule.requires) and all(t.startswith("ncu_") for t in rule.requires)


def run_rules(
    run: Run,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    select: set[str] | None = None,
    strict: bool = False,
    ncu: Run | None = None,
    joined: JoinResult | None = None,
    before_each: Callable[[type[Rule]], None] | None = None,
) -> RuleReport:
    """Run the selected rules (all by default) on `run` and rank their findings by estimated gain.

    options: {"IO001": {"min_gain_us": 50}}; select: codes, code prefixes, categories or names.
    strict re-raises a rule's exception instead of recording it as an error outcome (tests).
    ncu: an Nsight Compute run of the same program as the timeline `run` (analyze --ncu): the ncu
    rules run on it, weighted by the timeline through `joined` (computed here when not given).
    before_each: called with each rule before it runs (progress on a surface; a cold stage takes seconds).
    """
    results = rule_results(run, options, select, strict, ncu, joined, before_each)
    return finish(results, run, ncu)


def rule_results(
    run: Run,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    select: set[str] | None = None,
    strict: bool = False,
    ncu: Run | None = None,
    joined: JoinResult | None = None,
    before_each: Callable[[type[Rule]], None] | None = None,
) -> list[RuleResult]:
    """Each selected rule's result on `run`, its findings as the rule made them (not capped, not merged across
    ranks): run_rules' first half, which a Dask worker runs on one rank (advisor.distributed). Rules run two at
    a time where the run allows it (advisor.engine.parallel)."""
    calls = rule_calls(run, options, select, strict, ncu, joined)
    before = None if before_each is None else (lambda i: before_each(calls[i][0]))
    return in_order(run if ncu is None else None, [call for _, call in calls], before)  # ncu rules: one connection


def rule_calls(run: Run, options: Mapping[str, Mapping[str, Any]] | None = None, select: set[str] | None = None,
               strict: bool = False, ncu: Run | None = None, joined: JoinResult | None = None
               ) -> list[tuple[type[Rule], Callable[[], RuleResult]]]:
    """Each selected rule with the call that runs it on `run` (an ncu rule on `ncu`, weighted by `joined`)."""
    rules = select_rules(select)
    resolved = resolve_options(rules, options)
    captured = captured_tables(run)
    if ncu is not None:
        from advisor.perf.ncu_join import join

        joined = joined or join(ncu, run)
    ncu_captured = captured_tables(ncu) if ncu is not None else set()
    calls: list[tuple[type[Rule], Callable[[], RuleResult]]] = []
    for r in rules:
        if ncu is not None and reads_ncu(r):
            calls.append((r, functools.partial(_run_one, r, ncu, resolved[r.code], ncu_captured, strict, joined)))
        else:
            calls.append(
                (r, functools.partial(_run_one, r, run, resolved[r.code], captured, strict, with_ncu=ncu is not None))
            )
    return calls


def finish(results: list[RuleResult], run: Run, ncu: Run | None = None) -> RuleReport:
    """The report of `results` on `run`: findings capped at their device's span, merged across ranks, ranked."""
    spans = device_span_ns(run) if [f for res in results for f in res.findings] else {}
    if ncu is not None and not run_span_ns(run):
        spans = {}
    return ranked(results, spans, device_ranks(run), run_span(run))


def ranked(
    results: list[RuleResult], spans: Mapping[int, int], ranks: Mapping[int, int], span: tuple[int, str]
) -> RuleReport:
    """Findings capped at `spans` (device -> span; empty: not capped), one per pattern across `ranks`, ranked by
    gain: the same whether the results come from one run or from each rank of a Dask map."""
    found = [f for res in results for f in res.findings]
    if found and spans:
        found = capped(found, spans)
    found = across_ranks(found, ranks)  # one finding per pattern across ranks (advisor.engine.ranks)
    findings = sorted(found, key=lambda f: (-f.est_gain_ns, f.code, f.location))
    return RuleReport(tuple(results), tuple(findings), *span)


def device_span_ns(run: Run) -> dict[int, int]:
    """Each device's span (first to last GPU activity, or its marked steps where they reach further): the most one
    device's finding can save."""
    if not run.count("kernels") and not run.count("memops"):
        return {}
    return {int(r["device_id"]): int(r["extent_ns"]) for r in metrics.query(run, "device_spans")}


def capped(findings: list[Finding], spans: Mapping[int, int]) -> list[Finding]:
    """No finding claims more than the time in its denominator: a device's (a rank's) finding at most that
    device's span, any other at most the longest span. A capped finding says so in its gain basis."""
    longest = max(spans.values(), default=0)
    out = []
    for f in findings:
        dev = f.window.device_id
        cap = spans.get(dev, longest) if dev is not None else longest
        if cap and f.est_gain_ns > cap:
            where = f"device {dev}'s span" if dev in spans else "the longest device span"
            f = replace(f, est_gain_ns=cap, gain_basis=f"{f.gain_basis}; capped at {where} ({ms(cap)}), the most it "
                        "can save")
        out.append(f)
    return out
