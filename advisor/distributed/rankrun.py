"""The per-rank rule work of a Dask map: one rank's run as a directory read would see it, its rules and verdict.

A directory read parses every rank into one run: device ids are renumbered across files and each file's clock
is shifted onto the run's earliest (parsers.kineto.merge). A worker opens its one rank file through the
cache (its local device ids, its own clock) and rebuilds that rank's slice of the directory read: every
`device_id` mapped to the run's id and every time column (`start_ns`, `end_ns`, `timestamp_ns`,
`trace_*_ns`) shifted by the file's clock shift. Its rules then see the rows they would see in the
directory read.

What a rank's rules read of the *other* ranks is seeded from the driver's reduce (metrics.seed), so nothing
is recomputed from one rank alone: `collective_instances` (this rank's rows, plus the others' rows of the
instances it arrived last in, with no device, which its net wait needs), `rank_comm`, `rank_clocks` and
`device_balance` (every rank's row). Rules that judge the ranks against each other (CROSS_RANK_RULES) run in
the driver over the same seeds; every other rule runs here. The seeded run is in memory, never written to
the rank file's cache entry (a later one-file analyze of it must not see another run's ranks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from advisor import metrics
from advisor.model.limits import keep_fixed_cap
from advisor.model.schema import TABLES
from advisor.model.store import Run

# rules that compare ranks with each other: they run once, in the driver, over the reduced per-rank rows
CROSS_RANK_RULES = frozenset({"CO002"})
# seeded into each rank's run from the reduce (every rank's rows; collective_instances is cut per rank)
SEEDED = ("collective_instances", "rank_comm", "rank_clocks", "device_balance")
TIME_COLUMNS = ("start_ns", "end_ns", "timestamp_ns", "trace_start_ns", "trace_end_ns")
MANY_RANGES = 1 << 30  # every range name: the driver picks the run's top names from the sums


@dataclass(frozen=True)
class RankPlan:
    """What the driver tells one rank's task: its file, clock shift, device ids, the seeds and the options."""

    path: str
    shift_ns: int
    devices: dict[int, int]  # local ordinal -> the run's device_id
    seeds: str  # directory of this rank's seed Parquet files (one per SEEDED metric)
    runs_row: dict[str, Any]  # the directory read's runs row (world size, ranks, trace span)
    cache_dir: str | None = None
    options: Mapping[str, Mapping[str, Any]] | None = None
    select: frozenset[str] | None = None
    rules: bool = True  # False (analyze --no-rules): the rank's facts and sections only


@dataclass(frozen=True)
class RankOutcome:
    """What one rank's task returns: rule results (findings uncapped), its verdict, and what the reduce needs."""

    path: str
    rank: int | None
    results: tuple[Any, ...]  # engine.findings.RuleResult, one per rule run here
    verdict: Any  # rules.classify.RunVerdict of this rank alone (its device verdicts; ranges in range_groups)
    range_groups: tuple[Any, ...]  # rules.classify.RangeGroup of every range name (sums over its windows)
    range_totals: dict[str, int]  # range name -> host time (metric range_name_totals): how names are picked
    basis: str | None  # the roofline's basis where the rank's trace recorded shapes (classify's `measured`)
    kernels: int
    steps: dict[int, int]  # device_id -> steady-state steps marked on it (0 entries: no steps)
    spans: dict[int, int]  # device_id -> span
    ranks: dict[int, int]  # device_id -> rank
    span_ns: int
    summary: Any = None  # advisor.distributed.summary.RankSummary: the rank's part of the run's summary facts
    roof: tuple[int, int, int] = (0, 0, 0)  # op argument sets, their kernels' ns, all kernel ns (rules.roof_verdict)
    host_record: tuple[dict[str, Any], ...] = ()  # metric host_record's rows: whether the host record is filtered
    input: dict[str, Any] | None = None  # engine.summary.input_info of the rank file (folded: distributed.inputs)
    ops: Any = None  # perf.ops.section.OpsPart: the rank's part of the `ops` section
    mfu: Any = None  # perf.mfu.MfuPart: the rank's part of the `mfu` section (every range name's sums)
    serving: Any = None  # perf.serving.ServingPart: the rank's part of the `serving` section


def rank_tables(run: Run, devices: Mapping[int, int], shift_ns: int) -> dict[str, pa.Table]:
    """The rank's model tables with device ids mapped and times shifted as the directory read gives them."""
    out = {}
    for name in TABLES:
        t = run.table_arrow(name)
        for i, col in enumerate(t.column_names):
            if col == "device_id" and devices and t.num_rows:
                keys = pa.array(list(devices), t.schema.field(i).type)
                vals = pa.array(list(devices.values()), t.schema.field(i).type)
                idx = pc.index_in(t[col], value_set=keys)
                t = t.set_column(i, col, pc.if_else(pc.is_null(idx), t[col], pc.take(vals, idx)))
            elif col in TIME_COLUMNS and shift_ns and t.num_rows:
                t = t.set_column(i, col, pc.add(t[col], pa.scalar(shift_ns, t.schema.field(i).type)))
        out[name] = t
    return out


def rank_run(plan: RankPlan) -> Run:
    """The rank's run, rebuilt in memory as the directory read would see it, with the cross-rank seeds."""
    from advisor.ingest import open_run

    keep_fixed_cap()  # several workers share the host: no per-trace raise of DuckDB's cap
    own = open_run(plan.path, cache_dir=Path(plan.cache_dir) if plan.cache_dir else None)
    tables = rank_tables(own, plan.devices, plan.shift_ns)
    own.close()
    row = tables["runs"].to_pylist()[0] if tables["runs"].num_rows else {}
    tables["runs"] = pa.Table.from_pylist([row | plan.runs_row], schema=tables["runs"].schema)
    run = Run.from_tables(tables)
    for name in SEEDED:
        metrics.seed(run, name, Path(plan.seeds) / f"{name}.parquet")
    return run


def analyze_rank(plan: RankPlan) -> RankOutcome:
    """One rank's rules (all but the cross-rank ones) and verdict, on the rebuilt run (a Dask task)."""
    from advisor.distributed.summary import rank_summary
    from advisor.engine.findings import device_span_ns, rule_results, run_span_ns
    from advisor.engine.ranks import device_ranks
    from advisor.engine.summary import input_info
    from advisor.rules.classify import classify, range_groups
    from advisor.rules.registry import select_rules
    from advisor.rules.roof_verdict import roof_classes
    from advisor.rules.steps import step_totals

    run = rank_run(plan)
    try:
        codes = {r.code for r in select_rules(set(plan.select) if plan.select else None)} - CROSS_RANK_RULES
        codes = codes if plan.rules else set()
        results = rule_results(run, plan.options, codes) if codes else []
        steps = {d.device_id: d.n_windows for d in step_totals(run)}
        ranks = device_ranks(run)
        verdict = classify(run, max_ranges=0)
        roof = roof_classes(run) if verdict.devices else None
        shift, basis = (roof.shift, roof.basis) if roof is not None else (None, None)
        kernel_ns = sum(int(r["ns"]) for r in metrics.query(run, "kernel_totals"))
        totals = {str(r["name"]): int(r["total_ns"]) for r in metrics.query(run, "range_name_totals", max_depth=1)}
        ops, mfu, serving = sections(run)
        return RankOutcome(
            plan.path, next(iter(ranks.values()), None), tuple(results), verdict,
            tuple(range_groups(run, MANY_RANGES, 1, shift)) if verdict.devices else (), totals, basis,
            run.count("kernels"), steps, device_span_ns(run), ranks, run_span_ns(run), rank_summary(run),
            (roof.kernels, roof.modelled_ns, kernel_ns) if roof is not None else (0, 0, kernel_ns),
            tuple(metrics.query(run, "host_record")), input_info(run), ops, mfu, serving,
        )
    finally:
        run.close()


def sections(run: Run) -> tuple[Any, Any, Any]:
    """The rank's parts of the `ops`, `mfu` and `serving` sections (perf.ops.section.OpsPart, perf.mfu.MfuPart,
    perf.serving.ServingPart; None where the rank has none): the mfu part keeps every range name's sums, the
    driver picks the run's top names."""
    from advisor.perf.mfu import mfu_part
    from advisor.perf.ops.section import ops_part
    from advisor.perf.serving import serving_part
    from advisor.rules.steps import step_bounds

    return ops_part(run), mfu_part(run, lambda: step_bounds(run), MANY_RANGES), serving_part(run)
