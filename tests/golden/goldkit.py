"""Ground truth from the reference workloads: run the advisor on each baseline/optimized pair and
compare with what the pair's PROVENANCE.json says (expected class, top finding, measured gain).

Used by tests/golden/test_reference_pairs.py (asserts) and scripts/gen_accuracy.py (writes
docs/accuracy.md); both see the same `PairResult`s.

Definitions (also printed in docs/accuracy.md):
- class hit: the baseline's run verdict class equals the expected class (a `mixed` verdict hits when its
  leading class, the larger of the two it names, is the expected one; it shows as `mixed:A+B`).
- top hit: the baseline's first finding (ranked by estimated gain) has the pair's rule name
  (pattern names map to rule names through rule_names.toml).
- absent hit: in the optimized run, every rule in `absent` either does not fire, or its predicted
  gain per step is under ABSENT_RATIO (25%) of the same rule's predicted gain per step on the baseline.
- predicted gain per step: the findings of the pair's rule, summed per device (a rule may report
  one finding per copy direction), the largest device taken (devices run in parallel), divided by
  the iterations in the trace: steps plus marked warm-up iterations (ranges `step`/`ProfilerStep#N`
  and `warmup`), since findings are measured over the whole capture, warm-up included.
- measured gain per step: PROVENANCE step_time_ms baseline_median - optimized_median (no profiler).
- a pair with an Nsight Compute capture of the same program (fixtures/ncu/<workload>_<variant>/)
  is analyzed with it joined, the same path as `advisor analyze TRACE --ncu REPORT`: the ncu rules
  weigh their findings by the kernel's timeline time and the verdict uses ncu classes.
"""

from __future__ import annotations

import importlib.util
import json
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor import metrics
from advisor.engine.findings import RuleReport, classify, run_rules
from advisor.engine.ncu import join_timeline
from advisor.model.store import Run
from advisor.rules.classify import Verdict
from advisor.rules.steps import WARMUP_PATTERN, step_windows
from tests import savings

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
HERE = Path(__file__).resolve().parent
TIMELINE_FORMATS = ("nsys", "kineto")  # ncu-only captures carry no timeline
DATA_SUFFIXES = (".sqlite.gz", ".json.gz")
NCU_SUFFIXES = (".ncu-rep.xz", ".raw.csv.gz")  # the report when ncu_report is installed, else its CSV export
ABSENT_RATIO = 0.25
CHECKS = ("class", "top", "absent")


@dataclass(frozen=True)
class Variant:
    """One captured variant of a pair: its folder, data files and PROVENANCE."""

    folder: Path
    files: tuple[Path, ...]
    provenance: dict[str, Any]
    ncu: Path | None = None  # an Nsight Compute capture of the same program, joined when present


@dataclass(frozen=True)
class Pair:
    workload: str  # e.g. IO001_pageable_memcpy
    fmt: str
    baseline: Variant
    optimized: Variant

    @property
    def prov(self) -> dict[str, Any]:
        return self.baseline.provenance

    @property
    def inputs(self) -> str:
        """What the advisor reads: the timeline format, plus 'ncu' when an ncu capture is joined."""
        return f"{self.fmt} + ncu" if self.baseline.ncu and self.optimized.ncu else self.fmt

    @property
    def code(self) -> str:
        return str(self.prov["code"])

    @property
    def pattern(self) -> str:
        return str(self.prov["rule"])

    @property
    def rule(self) -> str:
        return rule_names().get(self.pattern, self.pattern)

    @property
    def measured_ms(self) -> float:
        st = self.prov["step_time_ms"]
        return float(st["baseline_median"]) - float(st["optimized_median"])

    @property
    def measured_pct(self) -> float:
        """The measured gain as a share of the unprofiled baseline step."""
        base = float(self.prov["step_time_ms"]["baseline_median"])
        return 100.0 * self.measured_ms / base if base > 0 else 0.0


@dataclass
class PairResult:
    pair: Pair
    baseline_class: str
    baseline_top: str  # name of findings[0], '' when none
    baseline_findings: list[tuple[str, float]]  # (name, gain ms per iteration), ranked
    optimized_findings: list[tuple[str, float]]
    iterations_baseline: int
    iterations_optimized: int
    predicted_ms: float | None  # the pair's rule on the baseline, per iteration
    optimized_rule_ms: dict[str, float]  # absent rules on the optimized run, per iteration
    traced_baseline_ms: float | None = None  # one iteration in the trace (under the profiler)
    traced_optimized_ms: float | None = None
    hits: dict[str, bool] = field(default_factory=dict)
    # per capture (fixtures/<fmt>/<folder>): findings claiming more than a denominator they name (tests/savings.py)
    savings: dict[str, list[str]] = field(default_factory=dict)

    @property
    def traced_gain_ms(self) -> float | None:
        if self.traced_baseline_ms is None or self.traced_optimized_ms is None:
            return None
        return self.traced_baseline_ms - self.traced_optimized_ms

    @property
    def traced_ratio(self) -> float | None:
        g = self.traced_gain_ms
        if self.predicted_ms is None or g is None or g <= 0:
            return None
        return self.predicted_ms / g

    @property
    def predicted_pct(self) -> float | None:
        """The prediction as a share of the traced baseline iteration (the profiler slows both alike)."""
        if self.predicted_ms is None or not self.traced_baseline_ms:
            return None
        return 100.0 * self.predicted_ms / self.traced_baseline_ms

    @property
    def ratio(self) -> float | None:
        if self.predicted_ms is None or self.pair.measured_ms <= 0:
            return None
        return self.predicted_ms / self.pair.measured_ms


def rule_names() -> dict[str, str]:
    return {str(k): str(v) for k, v in tomllib.loads((HERE / "rule_names.toml").read_text()).items()}


def known_misses() -> dict[str, dict[str, Any]]:
    """workload -> {checks: [...], reason: str} from known_misses.toml."""
    doc = tomllib.loads((HERE / "known_misses.toml").read_text())
    return {str(k): dict(v) for k, v in doc.items()}


def _variant(folder: Path) -> Variant:
    files = tuple(sorted(f for f in folder.iterdir() if f.name.endswith(DATA_SUFFIXES)))
    return Variant(folder, files, json.loads((folder / "PROVENANCE.json").read_text()), ncu_capture(folder.name))


def ncu_capture(scenario: str) -> Path | None:
    """fixtures/ncu/<scenario>/ as a report (or, without the ncu_report module, its CSV export)."""
    folder = FIXTURES / "ncu" / scenario
    if not folder.is_dir():
        return None
    suffixes = NCU_SUFFIXES if importlib.util.find_spec("ncu_report") else NCU_SUFFIXES[1:]
    for suffix in suffixes:
        found = sorted(folder.glob(f"*{suffix}"))
        if found:
            return found[0]
    return None


def discover() -> list[Pair]:
    """Every workload with a timeline capture (nsys or Kineto) of both variants."""
    pairs = []
    for fmt in TIMELINE_FORMATS:
        for prov in sorted((FIXTURES / fmt).glob("*_baseline/PROVENANCE.json")):
            base = prov.parent
            opt = base.with_name(base.name[: -len("baseline")] + "optimized")
            if not (opt / "PROVENANCE.json").is_file():
                continue
            workload = base.name[: -len("_baseline")]
            pairs.append(Pair(workload, fmt, _variant(base), _variant(opt)))
    return sorted(pairs, key=lambda p: (p.workload, p.fmt))


def input_path(v: Variant, scratch: Path) -> Path:
    """The path to open: the one data file, or a folder of links to the rank files (the fixture
    folder also holds PROVENANCE.json, which is not a trace)."""
    if len(v.files) == 1:
        return v.files[0]
    d = scratch / v.folder.name
    d.mkdir(parents=True, exist_ok=True)
    for f in v.files:
        link = d / f.name
        if not link.exists():
            link.symlink_to(f)
    return d


def step_count(run: Run) -> int:
    """Step instances in the trace (the most on any one device); 0 when none are marked."""
    per: dict[int, int] = {}
    for w in step_windows(run):
        per[w.device_id] = per.get(w.device_id, 0) + 1
    return max(per.values(), default=0)


def iterations(run: Run) -> int:
    """Steps plus marked warm-up iterations (at least 1)."""
    steps = step_count(run)
    warm = 0
    if run.count("ranges"):
        rows = run.sql_dicts(
            "SELECT count(*) AS n FROM ranges r JOIN strings s ON s.string_id = r.name_id "
            "WHERE r.device_id IS NULL AND regexp_matches(lower(s.value), $p)",
            {"p": WARMUP_PATTERN},
        )
        warm = int(rows[0]["n"]) if rows else 0
    return int(max(1, steps + warm))


def traced_iteration_ms(run: Run) -> float | None:
    """One iteration as the trace shows it: the mean marked step (on the device with the most steps),
    else the longest device span over the iterations; None when the trace has no GPU activity."""
    per: dict[int, list[int]] = {}
    for w in step_windows(run):
        per.setdefault(w.device_id, []).append(w.span_ns)
    if per:
        spans = max(per.values(), key=len)
        return sum(spans) / len(spans) / 1e6
    span = max((int(r["span_ns"]) for r in metrics.query(run, "device_spans")), default=None)
    return None if span is None else span / 1e6 / iterations(run)


def rule_gain_ns(report: RuleReport, rule: str) -> int | None:
    """The rule's findings summed per device, the largest device; None when it did not fire."""
    per: dict[int | None, int] = {}
    for f in report.findings:
        if f.name == rule:
            per[f.window.device_id] = per.get(f.window.device_id, 0) + f.est_gain_ns
    return max(per.values()) if per else None


def _lead(v: Verdict) -> str:
    """The verdict class as the table shows it: `mixed:A+B` names both classes of a mixed verdict."""
    return f"mixed:{'+'.join(v.classes)}" if v.class_ == "mixed" else v.class_


def analyze(v: Variant, open_run: Callable[[Path], Run], scratch: Path, joined: bool) -> tuple[Run, RuleReport, str]:
    """The variant's timeline run, its rule report and its verdict class; with its ncu capture joined
    when `joined` (what `advisor analyze TRACE --ncu REPORT` does: engine.analyze.analyze_run)."""
    run = open_run(input_path(v, scratch))
    if not joined or v.ncu is None:
        return run, run_rules(run), _lead(classify(run).run)
    ncu = open_run(v.ncu)
    join = join_timeline(ncu, run)
    return run, run_rules(run, ncu=ncu, joined=join), _lead(classify(run, ncu=join).run)


def evaluate(pair: Pair, open_run: Callable[[Path], Run], scratch: Path) -> PairResult:
    joined = pair.inputs.endswith("ncu")
    base, rb, base_class = analyze(pair.baseline, open_run, scratch, joined)
    opt, ro, _ = analyze(pair.optimized, open_run, scratch, joined)
    nb, no = iterations(base), iterations(opt)
    absent = [rule_names().get(a, a) for a in pair.optimized.provenance["expected"]["absent"]] or [pair.rule]
    gain_b = rule_gain_ns(rb, pair.rule)
    res = PairResult(
        pair=pair,
        baseline_class=base_class,
        baseline_top=rb.findings[0].name if rb.findings else "",
        baseline_findings=[(f.name, f.est_gain_ns / 1e6 / nb) for f in rb.findings],
        optimized_findings=[(f.name, f.est_gain_ns / 1e6 / no) for f in ro.findings],
        iterations_baseline=nb,
        iterations_optimized=no,
        predicted_ms=None if gain_b is None else gain_b / 1e6 / nb,
        optimized_rule_ms={a: (rule_gain_ns(ro, a) or 0) / 1e6 / no for a in absent},
        traced_baseline_ms=traced_iteration_ms(base),
        traced_optimized_ms=traced_iteration_ms(opt),
    )
    res.savings = {capture_id(pair, pair.baseline): savings_violations(base, rb),
                   capture_id(pair, pair.optimized): savings_violations(opt, ro)}
    exp = pair.prov["expected"]
    res.hits["class"] = res.baseline_class.removeprefix("mixed:").split("+")[0] == exp["class"]
    res.hits["top"] = res.baseline_top == rule_names().get(exp["top_finding"], exp["top_finding"])
    res.hits["absent"] = all(
        ms == 0 or (_base_ms(rb, a, nb) > 0 and ms < ABSENT_RATIO * _base_ms(rb, a, nb))
        for a, ms in res.optimized_rule_ms.items()
    )
    return res


def capture_id(pair: Pair, v: Variant) -> str:
    """How tests/savings_known.toml names one of our captures."""
    return f"fixtures/{pair.fmt}/{v.folder.name}"


def savings_violations(run: Run, report: RuleReport) -> list[str]:
    """The report's findings that claim more than a denominator they name (the JSON form of each finding)."""
    spans = {int(r["device_id"]): int(r["extent_ns"]) for r in metrics.query(run, "device_spans")}
    return savings.violations(report.to_dict()["findings"], spans)


def _base_ms(report: RuleReport, rule: str, n: int) -> float:
    return (rule_gain_ns(report, rule) or 0) / 1e6 / n


def evaluate_all(open_run: Callable[[Path], Run], scratch: Path) -> Iterator[PairResult]:
    for pair in discover():
        yield evaluate(pair, open_run, scratch)


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def _mark(res: PairResult, check: str, misses: dict[str, dict[str, Any]]) -> str:
    if res.hits[check]:
        return "hit"
    known = check in misses.get(res.pair.workload, {}).get("checks", [])
    return "miss (known)" if known else "MISS"


def render(results: list[PairResult], misses: dict[str, dict[str, Any]]) -> str:
    """docs/accuracy.md from the evaluated pairs."""
    n = len(results)
    full = sum(all(r.hits.values()) for r in results)
    count = {c: sum(r.hits[c] for r in results) for c in CHECKS}
    ratios = sorted(r.ratio for r in results if r.ratio is not None)
    within = sum(0.5 <= x <= 2.0 for x in ratios)
    median = ratios[len(ratios) // 2] if ratios else None
    traced = sorted(r.traced_ratio for r in results if r.traced_ratio is not None)
    t_within = sum(0.5 <= x <= 2.0 for x in traced)
    t_median = traced[len(traced) // 2] if traced else None
    lines = [
        "# Accuracy on the reference workloads",
        "",
        "<!-- Generated by scripts/gen_accuracy.py from fixtures/*/*/PROVENANCE.json and the advisor's own output;",
        "     do not edit. tests/golden/test_reference_pairs.py fails when this file is stale. -->",
        "",
        "Each pair under `reference_workloads/` has a baseline with one anti-pattern and an optimized",
        "variant with the fix, captured on a real GPU (see [reference_workloads.md](reference_workloads.md)).",
        "The advisor runs on the baseline's and the optimized run's timeline trace (nsys or Kineto); where the",
        "pair also has an Nsight Compute capture of the same program, it is joined (format `nsys + ncu`, the path",
        "of `advisor analyze TRACE --ncu REPORT`): the ncu rules weigh their findings by the kernel's timeline time.",
        "",
        "- **class**: the baseline's verdict class equals the expected class (a `mixed` verdict, shown as "
        "`mixed:A+B`, hits when its leading class A is the expected one).",
        "- **top**: the baseline's first finding (ranked by estimated gain) is the pair's rule.",
        f"- **absent**: on the optimized run the rule does not fire, or predicts under {ABSENT_RATIO:.0%} of "
        "its baseline gain per step.",
        "- **predicted / step**: the pair's rule's `est_gain_ns` on the baseline (findings summed per device, "
        "largest device), divided by the iterations in the trace (marked steps plus warm-up iterations: "
        "findings cover the whole capture).",
        "- **measured / step**: baseline minus optimized median step time without a profiler (PROVENANCE.json).",
        "- **traced / step**: the same difference read from the two traces (mean marked step, else device span over "
        "the iterations): what the fix saved under the profiler. The profiler slows launch-heavy code most (every "
        "kernel launch and framework op is recorded), so launch-bound pairs save more in the trace than without it; "
        "`ratio (traced)` compares the prediction with this, the figure the trace itself can support.",
        "- **predicted % / measured %**: the prediction as a share of the traced baseline step, and the measured gain "
        "as a share of the unprofiled baseline step: shares carry over between profiled and unprofiled runs better "
        "than milliseconds.",
        "- A miss listed in `tests/golden/known_misses.toml` shows as `miss (known)`; the reasons are below.",
        "",
        "Op models (FLOPs and bytes from recorded shapes): per-family coverage of the real traces, and the share of",
        "kernel time with a model, are in [op-coverage.md](op-coverage.md) (scripts/gen_op_coverage.py).",
        "",
        "## Summary",
        "",
        f"- pairs: {n}; all three checks hit: {full}",
        f"- class hits: {count['class']}/{n}; top-finding hits: {count['top']}/{n}; "
        f"absent-after-fix hits: {count['absent']}/{n}",
        f"- pairs with a predicted gain: {len(ratios)}/{n}; predicted/measured within 0.5x-2x: {within}/{len(ratios)}; "
        f"median ratio {_fmt(median)}",
        f"- against the gain read from the traces: within 0.5x-2x: {t_within}/{len(traced)}; median ratio "
        f"{_fmt(t_median)}",
        "",
        "## Pairs",
        "",
        "| pair | format | chapter | pattern | rule | expected class | baseline verdict | top finding | class | top "
        "| absent | predicted / step (ms) | measured / step (ms) | ratio | traced / step (ms) | ratio (traced) "
        "| predicted % | measured % |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        p = r.pair
        lines.append(
            f"| {p.workload} | {p.inputs} | {p.prov['chapter']} | {p.pattern} | {p.rule} "
            f"| {p.prov['expected']['class']} "
            f"| {r.baseline_class} | {r.baseline_top or '(none)'} | {_mark(r, 'class', misses)} "
            f"| {_mark(r, 'top', misses)} | {_mark(r, 'absent', misses)} | {_fmt(r.predicted_ms)} "
            f"| {_fmt(p.measured_ms)} | {_fmt(r.ratio)} | {_fmt(r.traced_gain_ms)} | {_fmt(r.traced_ratio)} "
            f"| {_fmt(r.predicted_pct)} | {_fmt(p.measured_pct)} |"
        )
    lines += ["", "## Known misses", ""]
    by_name = {r.pair.workload: r for r in results}
    for name, m in sorted(misses.items()):
        hit = by_name.get(name)
        ranks = ", ".join(f"{n} {g:.3g} ms" for n, g in hit.baseline_findings[:3]) if hit else ""
        found = f" (baseline ranks, per step: {ranks})" if ranks else ""
        lines.append(f"- **{name}** ({', '.join(m['checks'])}): {m['reason']}{found}")
    return "\n".join(lines) + "\n"
