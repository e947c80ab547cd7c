"""Each rank's outcome folded into the run's combine as it arrives, so the driver never holds every outcome.

A rank's outcome (advisor.distributed.rankrun.RankOutcome: its rule results with their findings, its device
verdicts, its range sums) is about 90 KB as Python objects; holding all of them made the driver grow with the
ranks. `Fold.add` keeps of each outcome only what the run's report needs, in any arrival order, and the result
is the one the combine gives over the outcomes in file order (advisor.distributed.combine):

- per rule: the result that decides the run's outcome (fired before error before clean before not
  applicable, the lowest file index on a tie), its summed time and its number of findings;
- per finding pattern across ranks (engine.ranks: a rule at one place on several devices with ranks): the
  worst finding and one row per rank for its per-rank table; a finding no pattern groups is kept whole;
- per device: its verdict, span, rank and steady-state steps; per range name: its sums over the ranks;
- the run's summary facts (advisor.distributed.summary.SummaryFold), its input facts
  (advisor.distributed.inputs.InputFold) and the parts of its `ops` and `mfu` sections (perf.ops.section.OpsPart,
  perf.mfu.MfuPart, perf.serving.ServingPart: per device, or sums per name);
- per clean rule, what its clean outcome over the run needs (`CleanFold`).

Ties that the file order broke are broken by each finding's key (rule position, file index, position in
the rank's findings), so the ranked findings come out in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from advisor.distributed.inputs import InputFold
from advisor.distributed.summary import SummaryFold
from advisor.engine.findings import RuleResult
from advisor.engine.ranks import groupable, merged, place, rank_row, worse
from advisor.rules.base import ADDITIVE_UNITS, Clean, Finding, Fired
from advisor.rules.classify import DeviceVerdict, RunVerdict

Key = tuple[int, int, int]  # rule position, file index (-1: found in the driver), position among its findings
Keyed = tuple[Key, Finding]

# a rule's outcome on the run from its outcomes on the ranks: fired anywhere, else broken, else clean
PRECEDENCE = {"fired": 0, "error": 1, "clean": 2, "not_applicable": 3}


@dataclass
class _Group:
    """One finding pattern (rule, place) across ranks: its worst finding and a row per finding."""

    first: Key
    worst: Keyed
    devices: set[int] = field(default_factory=set)
    rows: list[tuple[int, Key, dict[str, Any]]] = field(default_factory=list)  # rank, key, row
    members: list[Keyed] | None = field(default_factory=list)  # whole findings while it may stay unmerged


@dataclass
class FindingFold:
    """The run's findings, capped and merged across ranks as engine.findings.ranked does, folded one rank at a
    time. A finding whose cap needs the run's longest span (no device span of its own) waits for the end."""

    groups: dict[tuple[str, str], _Group] = field(default_factory=dict)
    single: list[Keyed] = field(default_factory=list)  # findings no pattern groups
    pending: list[Keyed] = field(default_factory=list)  # uncapped: capped at the longest span at the end
    ranks: dict[int, int] = field(default_factory=dict)  # device_id -> rank, every rank's
    spans: dict[int, int] = field(default_factory=dict)  # device_id -> span, every rank's

    def add(self, found: Sequence[Keyed], spans: Mapping[int, int], ranks: Mapping[int, int]) -> None:
        """One rank's findings (uncapped), with its devices' spans and ranks."""
        from advisor.engine.findings import capped

        self.spans.update(spans)
        self.ranks.update(ranks)
        for key, f in found:
            dev = f.window.device_id
            if dev is not None and dev in spans:
                self._fold(key, capped([f], spans)[0])
            else:
                self.pending.append((key, f))
        if len(set(self.ranks.values())) >= 2:
            for g in self.groups.values():
                self._compact(g)

    def _fold(self, key: Key, f: Finding) -> None:
        if not groupable(f, self.ranks):
            self.single.append((key, f))
            return
        g = self.groups.setdefault((f.code, place(f)), _Group(key, (key, f)))
        g.first = min(g.first, key)
        wk, w = g.worst
        if worse(f, w) or (not worse(w, f) and key < wk):
            g.worst = (key, f)
        dev = f.window.device_id or 0
        g.devices.add(dev)
        g.rows.append((self.ranks[dev], key, rank_row(f, self.ranks[dev])))
        if g.members is not None:
            g.members.append((key, f))
            self._compact(g)

    def _compact(self, g: _Group) -> None:
        """Drop a group's whole findings once it is sure to merge: on two devices, in a run of two ranks."""
        if g.members is not None and len(g.devices) > 1 and len(set(self.ranks.values())) >= 2:
            g.members = None

    def findings(self) -> list[Finding]:
        """The run's findings, ranked by gain (engine.findings.ranked's order)."""
        from advisor.engine.findings import capped

        pending, self.pending = self.pending, []
        for key, f in pending:
            self._fold(key, capped([f], self.spans)[0] if self.spans else f)
        n_ranks = len(set(self.ranks.values()))
        out = list(self.single)
        for g in self.groups.values():
            if n_ranks >= 2 and len(g.devices) > 1:
                rows = [r for _, _, r in sorted(g.rows, key=lambda x: (x[0], x[1]))]
                out.append((g.first, merged(g.worst[1], rows, n_ranks)))
            else:
                out.extend(g.members or [])
        out.sort(key=lambda kf: (-kf[1].est_gain_ns, kf[1].code, kf[1].location, kf[0]))
        return [f for _, f in out]


@dataclass
class CleanFold:
    """A rule's clean outcomes over the ranks, for its clean outcome over the run (combine.clean_outcome): the
    additive evidence (ADDITIVE_UNITS) summed by name, the clean rank with the largest value of the rule's
    `clean_worst` evidence (ties: the lowest file index), and whether the ranks' notes differ."""

    first: tuple[int, Clean, int | None]  # file index, outcome, rank
    sums: dict[str, int] = field(default_factory=dict)
    worst: tuple[float, int, Clean] | None = None
    differ: bool = False
    ranks: int = 0

    def add(self, o: Clean, index: int, rank: int | None, worst_key: str | None) -> None:
        self.ranks += 1
        if index < self.first[0]:
            self.first = (index, o, rank)
        self.differ = self.differ or o.note != self.first[1].note
        for e in o.evidence:
            if e.unit in ADDITIVE_UNITS and isinstance(e.value, int):
                self.sums[e.name] = self.sums.get(e.name, 0) + e.value
        v = next((float(e.value) for e in o.evidence if e.name == worst_key and isinstance(e.value, (int, float))),
                 None)
        if v is not None and (self.worst is None or (-v, index) < (-self.worst[0], self.worst[1])):
            self.worst = (v, index, o)


@dataclass
class _Rule:
    best: tuple[int, int]  # precedence, file index
    result: RuleResult  # the deciding rank's result, its findings dropped (they are folded apart)
    elapsed_s: float
    found: int
    clean: CleanFold | None = None


@dataclass
class Fold:
    """Every rank's outcome folded: rule results, findings, and what the run's verdict sums."""

    rules: dict[str, _Rule] = field(default_factory=dict)
    findings: FindingFold = field(default_factory=FindingFold)
    devices: list[DeviceVerdict] = field(default_factory=list)
    steps: dict[int, int] = field(default_factory=dict)
    roof: bool = False  # whether any rank's verdict has the per-op roofline's basis
    roof_sums: list[int] = field(default_factory=lambda: [0, 0, 0])  # op argument sets, modelled ns, kernel ns
    first: tuple[int, RunVerdict] | None = None  # the lowest file index's own verdict
    range_totals: dict[str, int] = field(default_factory=dict)
    range_sums: dict[str, list[Any]] = field(default_factory=dict)  # name -> [count, total, class ns]
    kernels: bool = False
    span_ns: int = 0
    count: int = 0
    summary: SummaryFold = field(default_factory=SummaryFold)
    host_record: list[dict[str, Any]] = field(default_factory=list)  # every rank's metric host_record rows
    input: InputFold = field(default_factory=InputFold)
    ops: Any = None  # perf.ops.section.OpsPart, every rank's folded
    mfu: Any = None  # perf.mfu.MfuPart, every rank's folded
    serving: Any = None  # perf.serving.ServingPart, every rank's folded

    def add(self, o: Any, index: int, order: Mapping[str, int]) -> None:
        """Rank outcome `o` (rankrun.RankOutcome) of file `index`; `order`: rule code -> registry position."""
        found: list[Keyed] = []
        for r in o.results:
            self._rule(r, index, o.rank)
            found += [((order.get(r.code, -1), index, i), f) for i, f in enumerate(r.findings)]
        self.findings.add(found, o.spans, o.ranks)
        self.devices += [_unbased(d, o.basis) for d in o.verdict.devices] if o.basis else o.verdict.devices
        self.steps.update({d: n for d, n in o.steps.items() if n})
        self.roof = self.roof or bool(o.basis)
        self.roof_sums = [a + b for a, b in zip(self.roof_sums, o.roof, strict=True)]
        if self.first is None or index < self.first[0]:
            self.first = (index, o.verdict)
        self._ranges(o.range_totals, o.range_groups)
        self.kernels = self.kernels or bool(o.kernels)
        self.span_ns = max(self.span_ns, o.span_ns)
        self.count += 1
        if o.summary is not None:
            self.summary.add(o.summary)
        self.host_record += o.host_record
        if o.input is not None:
            self.input.add(o.input, index)
        self.ops = _folded(self.ops, o.ops)
        self.mfu = _folded(self.mfu, o.mfu)
        self.serving = _folded(self.serving, o.serving)

    def _rule(self, r: RuleResult, index: int, rank: int | None) -> None:
        best = (PRECEDENCE.get(r.kind, 9), index)
        kept = replace(r, outcome=Fired(())) if isinstance(r.outcome, Fired) else r
        got = self.rules.get(r.code)
        if got is None:
            got = self.rules[r.code] = _Rule(best, kept, r.elapsed_s, len(r.findings))
        else:
            got.elapsed_s += r.elapsed_s
            got.found += len(r.findings)
            if best < got.best:
                got.best, got.result = best, kept
        if isinstance(r.outcome, Clean):
            if got.clean is None:
                got.clean = CleanFold((index, r.outcome, rank))
            got.clean.add(r.outcome, index, rank, _worst_key(r.code))

    def _ranges(self, totals: Mapping[str, int], groups: Sequence[Any]) -> None:
        for name, t in totals.items():
            self.range_totals[name] = self.range_totals.get(name, 0) + t
        for name, count, total, ns in groups:
            g = self.range_sums.setdefault(name, [0, 0, {}])
            g[0] += count
            g[1] += total
            for k, x in ns.items():
                g[2][k] = g[2].get(k, 0) + x


def _unbased(d: DeviceVerdict, basis: str) -> DeviceVerdict:
    """A rank's device verdict without the rank's roofline basis (the run's, over every rank, goes on later)."""
    from advisor.rules.classify import NAME_BASIS

    return replace(d, verdict=replace(d.verdict, basis=NAME_BASIS + d.verdict.basis.removeprefix(basis)))


@cache
def _worst_key(code: str) -> str | None:
    from advisor.rules.registry import all_rules

    return next((r.clean_worst for r in all_rules() if r.code == code), None)


def _folded(into: Any, part: Any) -> Any:
    """A rank's section part folded into the run's (the first part is copied: the fold mutates it)."""
    if part is None:
        return into
    if into is None:
        from copy import deepcopy

        return deepcopy(part)
    into.fold(part)
    return into
