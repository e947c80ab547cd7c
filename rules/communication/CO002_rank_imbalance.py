from __future__ import annotations

import statistics

from advisor.rules.base import (
    Clean,
    Context,
    Evidence,
    Fired,
    Fix,
    NotApplicable,
    Option,
    Outcome,
    Rule,
    Window,
    ms,
    pct,
)


class RankImbalance(Rule):
    """One rank (device) does more work than the others; the rest wait for it in every collective.

    ## What it detects
    Runs with two or more devices where the busiest device's non-communication GPU time exceeds
    the median device's by at least `min_imbalance_pct`.

    ## Why it costs time
    Collectives complete only when the slowest rank arrives. A rank with more work (uneven data
    sharding, an extra embedding table, a slower GPU, host interference) makes every other rank
    idle or spin inside NCCL kernels for the difference, every step.

    ## Trace signature
    Per device, durations only (ranks' clocks need not agree): work time (compute, memory and
    other kernels, copies) versus communication and idle time (metric `device_balance`). HTA's
    `get_potential_stragglers` and the TraceLens multi-rank report look at the same spread.

    ## How to fix
    Balance the work: shard data and embedding tables evenly (by cost, not by count), check that
    all ranks run the same kernels, pin ranks to their local NUMA node, and look at the slow rank
    alone for a host-side cause.

    ```python
    # before: tables assigned round-robin by count
    # after: assign by estimated cost (rows x dim x lookups), e.g. torchrec's planner
    ```
    Reference workload: `reference_workloads/CO002_straggler_rank/` (2 GPUs, uneven vs even batch split).

    ## Fix risk
    redesign: changes sharding plans; results unchanged.

    ## False positives
    Roles that differ on purpose (pipeline stages, a parameter server, rank 0 doing evaluation)
    are imbalanced by design. Traces of one step capture noise; compare several steps.

    ## Options
    `min_imbalance_pct` (busiest vs median work time).
    """

    code = "CO002"
    name = "rank-imbalance"
    category = "communication"
    chapter = (4, 12)
    requires = frozenset({"kernels"})
    status = "preview"
    options = {
        "min_imbalance_pct": Option(
            10.0,
            "busiest device's work time above the median device's, in %",
            "HTA get_potential_stragglers; book repo: |delta| > 5% improvement, > 20% major",
        ),
    }

    def applies(self, ctx: Context) -> NotApplicable | None:
        if len(ctx.metric("device_balance")) < 2:
            return NotApplicable("only one device ran kernels", "profile every rank (a directory of rank traces)")
        return None

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("device_balance")
        med = statistics.median(int(r["work_ns"]) for r in rows)
        top = max(rows, key=lambda r: r["work_ns"])
        low = min(rows, key=lambda r: r["work_ns"])
        excess = int(top["work_ns"]) - med
        evidence = [
            Evidence("devices", len(rows), "count"),
            Evidence("max_work_time", int(top["work_ns"]), "ns"),
            Evidence("median_work_time", int(med), "ns"),
            Evidence("min_work_time", int(low["work_ns"]), "ns"),
            Evidence("imbalance", pct(excess, med), "%", "median device's non-communication GPU time"),
            Evidence("straggler_device", int(top["device_id"]), "device"),
        ]
        if pct(excess, med) < float(ctx.opt("min_imbalance_pct")):
            return Clean(f"busiest device works {pct(excess, med)}% more than the median", tuple(evidence))
        rank = f" (rank {top['rank']})" if top["rank"] is not None else ""
        return Fired(
            (
                self.finding(
                    f"device {top['device_id']}{rank} does {ms(excess)} more GPU work than the median of "
                    f"{len(rows)} devices "
                    f"({pct(excess, med)}% more); the others wait for it in collectives",
                    window=Window(device_id=int(top["device_id"])),
                    evidence=evidence,
                    est_gain_ns=excess,
                    gain_basis="busiest device's non-communication GPU time minus the median device's: the time "
                    "the other "
                    "ranks wait per captured window if the work were balanced",
                    fixes=(
                        Fix(
                            "balance work across ranks",
                            "shard data/embedding tables by cost; check the slow rank for "
                            "extra kernels or host interference",
                            "redesign",
                        ),
                    ),
                    location="straggler",
                ),
            )
        )
