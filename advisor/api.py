"""`advisor.api`: the one door to the core, for the CLI, the TUI, the reports and notebooks.

    import advisor
    a = advisor.analyze("run.nsys-rep")        # the typed Analysis
    a.verdict.run.class_, a.headline, a.findings[0].fixes[0].title
    a.table("kernels").to_pandas()             # any model table or named metric
    advisor.diff(a, advisor.analyze("after.nsys-rep")).new

Runs are opened in one place (`with_run`: opened, worked on, closed, retried once when the cache
entry turns out damaged). Rules run once per run: a diff of two analyses matches their findings by
fingerprint. The surfaces (advisor.cli, advisor.tui, advisor.reports) import no other core module
(scripts/check_layers.py). Importing this module is cheap: the engine loads on first use.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from advisor.model.limits import check_address_space, out_of_memory

if TYPE_CHECKING:  # each name is imported on first use (module __getattr__ below): `import advisor.api` is cheap
    from advisor.diff import (
        DEFAULT_THRESHOLD_PCT,
        Side,
        SideOptions,
        diff_sides,
        open_capture,
        open_side,
        side_from_runs,
    )
    from advisor.diff.rulefacts import AnalysisDiff, from_analysis
    from advisor.diff.sides import resolve as resolve_side
    from advisor.diff.verify import verify
    from advisor.engine.analyze import Outcomes, analyze_run
    from advisor.engine.explore import (
        MAX_STREAMS,
        SORT_KEYS,
        busy_bins,
        gpu_window,
        idle_gaps,
        kernel_instances,
        kernel_table,
        range_tree,
        roofline,
        stream_bins,
    )
    from advisor.engine.findings import RuleReport, RuleResult, explain, list_rules
    from advisor.engine.kept import Kept, input_identity, keep_output, kept_output
    from advisor.engine.ncu import JoinedKernel, UnmatchedLaunch
    from advisor.engine.ncu import NcuJoin as NcuJoinSection
    from advisor.engine.ncu_profile import KernelFinding, NcuProfile, ProfiledKernel
    from advisor.engine.perfetto import chrome_trace
    from advisor.engine.rank_view import rank_view
    from advisor.engine.report_data import ReportInputs, report_inputs
    from advisor.engine.result import (
        Analysis,
        CopyStat,
        DeviceTime,
        FamilyTime,
        RangesSummary,
        Steps,
        StepTimes,
        Summary,
        TopKernels,
        document,
        dumps,
    )
    from advisor.engine.runs import retried, with_run
    from advisor.engine.tables import Table, table_names
    from advisor.ingest import open_run
    from advisor.model.cache_admin import Entry as CacheEntry
    from advisor.model.cache_admin import entries, evict, max_bytes, parse_size, work_bytes
    from advisor.model.entry import default_cache_dir
    from advisor.model.store import Run
    from advisor.parsers.base import ParseOptions, ProgressFn
    from advisor.parsers.registry import HELP as FORMATS_HELP
    from advisor.parsers.registry import trace_suffixes
    from advisor.perf.mfu import Mfu, Rate
    from advisor.perf.ops import MODELS as OP_MODELS
    from advisor.perf.ops import Cost, OpCall, RooflineTime, gpu_roofs, model_for, op_cost
    from advisor.perf.ops.attention import cost as attention_cost
    from advisor.perf.ops.conv import cost as conv_cost
    from advisor.perf.ops.gemm import cost as gemm_cost
    from advisor.perf.ops.section import Ops, OpStat
    from advisor.perf.peaks import PEAK_TABLE, PRECISION_LABEL, match_peaks
    from advisor.perf.range_verdicts import GpuMetrics, RangeGpuMetrics
    from advisor.perf.serving import Serving
    from advisor.rules.base import Finding, Fix, NotApplicable, Window
    from advisor.rules.catalog import sections
    from advisor.rules.classify import RangeVerdict, RunVerdict, Verdict
    from advisor.rules.registry import get_rule, select_rules
    from advisor.vocab import TimeShare, bound_suffix

# name -> the core module it comes from, imported on first use
_LAZY = {
    **dict.fromkeys(("DEFAULT_THRESHOLD_PCT", "Side", "SideOptions", "diff_sides", "open_capture", "open_side",
                     "side_from_runs"), "advisor.diff"),
    **dict.fromkeys(("AnalysisDiff", "DeviceTime", "from_analysis"), "advisor.diff.rulefacts"),
    **dict.fromkeys(("Outcomes", "analyze_run"), "advisor.engine.analyze"),
    **dict.fromkeys(("MAX_STREAMS", "SORT_KEYS", "busy_bins", "gpu_window", "idle_gaps", "kernel_instances",
                     "kernel_table", "range_tree", "roofline", "stream_bins"), "advisor.engine.explore"),
    **dict.fromkeys(("RuleReport", "RuleResult", "explain", "list_rules"), "advisor.engine.findings"),
    **dict.fromkeys(("ReportInputs", "report_inputs"), "advisor.engine.report_data"),
    **dict.fromkeys(("Kept", "input_identity", "keep_output", "kept_output"), "advisor.engine.kept"),
    **dict.fromkeys(("Analysis", "CopyStat", "DeviceTime", "FamilyTime", "RangesSummary", "StepTimes", "Steps",
                     "Summary", "TopKernels", "document", "dumps"), "advisor.engine.result"),
    **dict.fromkeys(("TimeShare", "bound_suffix"), "advisor.vocab"),
    **dict.fromkeys(("retried", "with_run"), "advisor.engine.runs"),
    **dict.fromkeys(("Table", "Window", "table_names"), "advisor.engine.tables"),
    "open_run": "advisor.ingest",
    "resolve_side": "advisor.diff.sides",
    "verify": "advisor.diff.verify",
    "chrome_trace": "advisor.engine.perfetto",
    "rank_view": "advisor.engine.rank_view",
    **dict.fromkeys(("CacheEntry", "entries", "evict", "max_bytes", "parse_size", "work_bytes"),
                    "advisor.model.cache_admin"),
    "default_cache_dir": "advisor.model.entry",
    **dict.fromkeys(("FORMATS_HELP", "trace_suffixes"), "advisor.parsers.registry"),
    "select_rules": "advisor.rules.registry",
    "Run": "advisor.model.store",
    **dict.fromkeys(("ParseOptions", "ProgressFn"), "advisor.parsers.base"),
    # op models without a trace: what would this shape cost on that GPU? (docs/op-models.md)
    **dict.fromkeys(("Cost", "OpCall", "OP_MODELS", "RooflineTime", "gpu_roofs", "model_for", "op_cost"),
                    "advisor.perf.ops"),
    "attention_cost": "advisor.perf.ops.attention",
    "conv_cost": "advisor.perf.ops.conv",
    "gemm_cost": "advisor.perf.ops.gemm",
    **dict.fromkeys(("Ops", "OpStat"), "advisor.perf.ops.section"),
    "PRECISION_LABEL": "advisor.perf.peaks",
    "Serving": "advisor.perf.serving",
    **dict.fromkeys(("GpuMetrics", "RangeGpuMetrics"), "advisor.perf.range_verdicts"),
    **dict.fromkeys(("KernelFinding", "NcuProfile", "ProfiledKernel"), "advisor.engine.ncu_profile"),
    **dict.fromkeys(("JoinedKernel", "NcuJoinSection", "UnmatchedLaunch"), "advisor.engine.ncu"),
    **dict.fromkeys(("Mfu", "Rate"), "advisor.perf.mfu"),
    **dict.fromkeys(("Finding", "Fix", "NotApplicable", "Window"), "advisor.rules.base"),
    "sections": "advisor.rules.catalog",
    **dict.fromkeys(("PEAK_TABLE", "match_peaks"), "advisor.perf.peaks"),
    **dict.fromkeys(("RangeVerdict", "RunVerdict", "Verdict"), "advisor.rules.classify"),
    "get_rule": "advisor.rules.registry",
}

__all__ = ["Analysis", "AnalysisDiff", "CacheEntry", "CopyStat", "Cost", "DEFAULT_THRESHOLD_PCT", "DeviceTime",
           "FORMATS_HELP", "FamilyTime", "Finding", "Fix", "GpuMetrics", "JoinedKernel", "Kept", "KernelFinding",
           "MAX_STREAMS", "Mfu", "NcuJoinSection", "NcuProfile", "NotApplicable", "OP_MODELS", "OpCall", "OpStat",
           "Ops", "Outcomes", "PEAK_TABLE", "PRECISION_LABEL", "ParseOptions", "ProfiledKernel", "ProgressFn",
           "RangeGpuMetrics", "RangeVerdict", "RangesSummary", "Rate", "ReportInputs", "RooflineTime", "RuleReport",
           "RuleResult", "Run", "RunVerdict",
           "SORT_KEYS", "Serving", "Side", "SideOptions", "StepTimes", "Steps", "Summary", "Table", "TimeShare",
           "TopKernels",
           "UnmatchedLaunch", "Verdict", "Window", "analyze", "analyze_run", "attention_cost", "bound_suffix",
           "busy_bins", "check_address_space", "chrome_trace", "conv_cost", "default_cache_dir", "diff", "diff_sides",
           "document", "dumps", "entries", "evict", "explain", "from_analysis", "gemm_cost", "get_rule", "gpu_roofs",
           "gpu_window", "idle_gaps", "input_identity", "keep_output", "kept_output", "kernel_instances",
           "kernel_table", "list_rules", "match_peaks", "max_bytes",
           "model_for", "op_cost", "open_capture", "open_run", "open_side", "out_of_memory", "parse_size",
           "range_tree", "rank_view", "report_inputs", "resolve_side", "retried", "roofline", "sections",
           "select_rules", "side_from_runs", "stream_bins", "table_names", "trace_suffixes", "verify", "with_run",
           "work_bytes"]


_RENAMED = {"resolve_side": "resolve", "CacheEntry": "Entry", "FORMATS_HELP": "HELP", "OP_MODELS": "MODELS",
            "attention_cost": "cost", "conv_cost": "cost", "gemm_cost": "cost",
            "NcuJoinSection": "NcuJoin"}  # api name -> module's


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), _RENAMED.get(name, name))
    raise AttributeError(f"module 'advisor.api' has no attribute {name!r}")


def analyze(
    path: str | os.PathLike[str],
    select: set[str] | Sequence[str] | None = None,
    *,
    top: int = 10,
    rules: bool = True,
    rule_options: Mapping[str, Mapping[str, Any]] | None = None,
    ncu: str | os.PathLike[str] | None = None,
    nsys: str | None = None,
    use_cache: bool = True,
    progress: ProgressFn | None = None,
    on_open: Callable[[], None] | None = None,
    gpu: str | None = None,
) -> Analysis:
    """Open the trace at `path`, analyze it and close it: the typed `Analysis`.

    select: rule codes, code prefixes, categories or names (all rules by default); rules=False: facts
    only. ncu: an Nsight Compute report of the same program, joined to the timeline. nsys: the nsys
    executable for .nsys-rep/.qdrep. gpu: the GPU to assume where the trace names none (--gpu; its peaks
    come from the docs/peaks.md row that name matches). progress: (done, total, what) while parsing, then analysing;
    on_open: called between the two (a surface names the new stage).
    """
    from dataclasses import replace

    from advisor.engine.analyze import analyze_run
    from advisor.ingest import open_run
    from advisor.parsers.base import ParseOptions, no_progress

    step = progress or no_progress
    options = ParseOptions(nsys=nsys, progress=step, gpu=gpu)
    chosen = set(select) if select else None

    def work(run: Run) -> Analysis:
        if on_open is not None:
            on_open()
        ncu_run = open_run(ncu, ParseOptions(nsys=nsys), use_cache=use_cache) if ncu is not None else None
        try:
            return analyze_run(run, top=top, rules=rules, rule_options=rule_options, select=chosen, ncu=ncu_run,
                               progress=step)
        finally:
            if ncu_run is not None:
                ncu_run.close()

    from advisor.engine.runs import with_run

    a = with_run(path, work, options, use_cache)
    return replace(a, opened_as=os.fspath(path), nsys=nsys)


def diff(base: Analysis, new: Analysis) -> AnalysisDiff:
    """What changed between two analyses: findings matched by fingerprint (new, resolved, changed), verdict.

    No rule runs again: both analyses carry their findings.
    """
    from advisor.diff.rulefacts import diff_analyses

    return diff_analyses(base, new)
