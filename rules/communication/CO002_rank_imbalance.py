from __future__ import annotations

import statistics
from typing import Any

from advisor.rules.base import (
    Clean,
    Context,
    Evidence,
    Finding,
    Fired,
    Fix,
    NotApplicable,
    Option,
    Outcome,
    Rule,
    Window,
    ms,
)
from advisor.rules.ranks import rank_table, straggler, verdict_distribution
from advisor.vocab import pct


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
    Where the collectives can be matched across ranks (metric `collective_instances`: process
    group and ordinal), the finding names the rank that arrives last, how often, and what its late
    arrivals cost the others (metric `rank_comm`), with each rank's row (`ranks` in the JSON), its
    clock offset (metric `rank_clocks`) and its own verdict. A straggler that is not the busiest
    device (host- or input-bound) is named by its arrivals: it fires on its cost to the others.

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
    `min_imbalance_pct` (busiest vs median work time); `min_late_pct` (a late rank's cost to each
    other rank, % of the median device span, where the work is balanced).
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
        "min_late_pct": Option(
            20.0,
            "the straggler's cost to each other rank (collectives matched across ranks) as % of the median device "
            "span, to fire where no device does much more work",
            "ours: above the mutual skew of balanced 2-rank DDP captures (12% in CO002's fixed run)",
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
            Evidence("imbalance", pct(excess, med, 0.0), "%", "median device's non-communication GPU time"),
            Evidence("straggler_device", int(top["device_id"]), "device"),
        ]
        table = rank_table(ctx)
        late, span = _lateness(table), int(statistics.median(int(r["span_ns"]) for r in rows))
        if pct(excess, med, 0.0) >= float(ctx.opt("min_imbalance_pct")):
            return Fired((self._busiest(top, len(rows), med, excess, evidence, table),))
        if table and pct(late, span, 0.0) >= float(ctx.opt("min_late_pct")):
            return Fired((self._late(table, late, span, evidence),))
        return Clean(f"busiest device works {pct(excess, med, 0.0)}% more than the median", tuple(evidence))

    def _busiest(
        self, top: dict[str, Any], n: int, med: float, excess: float, evidence: list[Evidence], table: list[Any]
    ) -> Finding:
        """The busiest device does more work than the median: balancing it saves the excess."""
        rank = f" (rank {top['rank']})" if top["rank"] is not None else ""
        cross, more = _cross_rank(table, int(top["device_id"])) if table else ("", [])
        return self.finding(
            f"device {top['device_id']}{rank} does {ms(excess)} more GPU work than the median of {n} devices "
            f"({pct(excess, med, 0.0)}% more); the others wait for it in collectives{cross}",
            window=Window(device_id=int(top["device_id"])),
            evidence=evidence + more,
            ranks=tuple(table),
            est_gain_ns=excess,
            gain_basis="busiest device's non-communication GPU time minus the median device's: the time the other "
            "ranks wait per captured window if the work were balanced",
            fixes=(_BALANCE,),
            location="straggler",
        )

    def _late(self, table: list[Any], late: int, span: int, evidence: list[Evidence]) -> Finding:
        """No device does much more work, but one rank arrives late at the collectives (host- or input-bound):
        the others wait for it; removing its lateness saves that wait on every other rank."""
        s = straggler(table)
        cross, more = _cross_rank(table, -1)
        return self.finding(
            f"rank {s['rank']} (device {s['device_id']}) arrives late at the collectives: each other rank waits "
            f"{ms(late)} for it ({pct(late, span, 0.0)}% of the median device span), though no device does much more "
            f"GPU work{cross}",
            window=Window(device_id=int(s["device_id"])),
            evidence=evidence + more + [Evidence("lateness", late, "ns")],
            ranks=tuple(table),
            est_gain_ns=late,
            gain_basis="the other ranks' wait in the collectives this rank arrived last in, per other rank "
            "(collectives matched across ranks): what each rank would stop waiting if it arrived on time",
            fixes=(_BALANCE,),
            location="straggler",
        )


_BALANCE = Fix(
    "balance work across ranks",
    "shard data/embedding tables by cost; check the slow rank for extra kernels or host interference",
    "redesign",
)


def _lateness(table: list[dict[str, Any]]) -> int:
    """The straggler's cost to the others, per other rank (0 without matched collectives)."""
    if len(table) < 2:
        return 0
    return int(straggler(table)["cost_ns"]) // (len(table) - 1)


def _cross_rank(table: list[dict[str, Any]], busiest: int) -> tuple[str, list[Evidence]]:
    """The message tail and evidence from collectives matched across ranks: who arrives last, how often, what
    it costs the others, the run's transfer vs peer-wait split, and the per-rank verdict distribution."""
    s = straggler(table)
    comm = sum(int(r["comm_ns"]) for r in table)
    wait = sum(int(r["wait_ns"]) for r in table)
    n = int(s["n_instances"])
    who = "it" if int(s["device_id"]) == busiest else f"rank {s['rank']} (device {s['device_id']})"
    text = (
        f". Matched across ranks: {who} arrives last at {s['n_last']} of {n} collectives, costing the other "
        f"ranks {ms(int(s['cost_ns']))} of waiting; communication is {pct(wait, comm, 0.0)}% waiting for peers and "
        f"{pct(comm - wait, comm, 0.0)}% transfer. Own verdicts: {verdict_distribution(table)}"
    )
    of = "communication kernel time of all ranks (collectives matched across ranks)"
    return text, [
        Evidence("straggler_rank", int(s["rank"]), "rank"),
        Evidence("straggler_last_arrivals", int(s["n_last"]), "count"),
        Evidence("straggler_cost", int(s["cost_ns"]), "ns"),
        Evidence("straggler_verdict", str(s["verdict"]), "class"),
        Evidence("peer_wait_share", pct(wait, comm, 0.0), "%", of),
        Evidence("transfer_share", pct(comm - wait, comm, 0.0), "%", of),
    ]
