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
from advisor.vocab import device_span_of, pct


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
    One rank's trace alone: the exposed time its collectives ran far longer than their bytes need
    (metric `comm_waits`, the device timeline class `comm_wait`), at `min_late_pct` of its span or
    more: another rank is late, and only the traces of all ranks can say which.
    Per device, durations only (ranks' clocks need not agree): work time (compute, memory and
    other kernels, copies) versus communication and idle time (metric `device_balance`). HTA's
    `get_potential_stragglers` and the TraceLens multi-rank report look at the same spread.
    Where the collectives can be matched across ranks (metric `collective_instances`: process
    group and ordinal), the finding names the rank that arrives last, how often, and what its late
    arrivals cost the others (metric `rank_comm`), with each rank's row (`ranks` in the JSON), its
    clock offset (metric `rank_clocks`) and its own verdict. A straggler named by its arrivals fires
    on its net cost to the others (their wait in the collectives it arrived last in, per other rank,
    less its own wait in theirs: ranks that wait for each other in turn are skewed, not held back by
    one) where that exceeds the busiest device's excess work. When it does no more GPU work than the
    median device, its host holds it back, and the fix names that rank's host, not the work split.
    Its gain is at most its host's time per step beyond the other ranks' own pace (metric
    `host_pace`: their ProfilerStep time less what their hosts spent blocked, synchronize calls and
    API calls of 1 ms or more, mostly waiting for it), over its steps, where every rank marks two or
    more: the others, released on time, would still wait for their own hosts. Ranks of one program
    whose hosts run at different speeds (a slower or shared CPU, the profiler's per-op cost) wait
    in every bucket; what arriving on time saves is the pace difference, not the sum of the waits.

    ## How to fix
    Balance the work: shard data and embedding tables evenly (by cost, not by count), check that
    all ranks run the same kernels. Where the late rank runs the same GPU work as the others, look
    at its host: work only it does (logging, evaluation, metrics gathering, checkpoints on rank 0),
    its input pipeline, its CPU/NUMA binding; CUDA graphs or torch.compile on every rank cut the
    host's per-op cost and the skew with it.

    ```python
    # before: tables assigned round-robin by count
    # after: assign by estimated cost (rows x dim x lookups), e.g. torchrec's planner
    ```
    Reference workload: `reference_workloads/CO002_straggler_rank/` (2 GPUs, uneven vs even batch split).

    ## Fix risk
    redesign: changes sharding plans; results unchanged.

    ## False positives
    Roles that differ on purpose (pipeline stages, a parameter server, rank 0 doing evaluation)
    are imbalanced by design. Traces of one step capture noise; compare several steps. A rank's
    kernels also run longer beside its own collectives waiting for a late peer (they share the SMs),
    so the rank that waits most can look busiest: where collectives are matched across ranks and
    the busiest device arrives last at fewer than half of them, the others do not wait for its
    extra work and the busiest form does not fire (the clean note says so).

    ## Options
    `min_imbalance_pct` (busiest vs median work time; a late rank within it runs the same work);
    `min_late_pct` (a late rank's net cost to each other rank, % of the median device span; for one
    rank's trace, its wait for peers, % of its span).
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
            "the straggler's net cost to each other rank (collectives matched across ranks: their wait for it less "
            "its wait for them) as % of the median device span, to fire on its arrivals",
            "ours: above the mutual skew of balanced 2-rank DDP captures (12% in CO002's fixed run)",
        ),
    }

    def applies(self, ctx: Context) -> NotApplicable | None:
        if len(ctx.metric("device_balance")) < 2 and not any(r["n_comm"] for r in ctx.metric("comm_exposure")):
            return NotApplicable(
                "only one device ran kernels, with no communication", "profile every rank (a directory of rank traces)"
            )
        return None

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("device_balance")
        if len(rows) < 2:
            return self._alone(ctx)
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
        net, span = _lateness(table), int(statistics.median(int(r["span_ns"]) for r in rows))
        pace = _pace_excess(ctx, table) if net else None
        late = net if pace is None else min(net, pace)
        busiest = pct(excess, med, 0.0) >= float(ctx.opt("min_imbalance_pct"))
        own = _host_late(table, rows, med, float(ctx.opt("min_imbalance_pct")))
        if own and pct(late, span, 0.0) >= float(ctx.opt("min_late_pct")) and (late > excess or not busiest):
            return Fired((self._late(table, (net, late, span), evidence, own, med),))
        held = _not_held_back(table, int(top["device_id"]))
        if busiest and held is None:
            return Fired((self._busiest(top, len(rows), med, excess, evidence, table),))
        return Clean(f"busiest device works {pct(excess, med, 0.0)}% more than the median{(busiest and held) or ''}",
                     tuple(evidence))

    def _alone(self, ctx: Context) -> Outcome:
        """One rank's trace: its collectives that ran far longer than their bytes need waited for a late peer. That
        wait is what it would save if the others arrived on time; which rank is late, and why, needs their traces."""
        r = next(r for r in ctx.metric("comm_exposure") if r["n_comm"])
        wait, span, dev = int(r["wait_ns"]), int(r["span_ns"]), int(r["device_id"])
        evidence = [
            Evidence("devices", 1, "count"),
            Evidence("comm_time", int(r["comm_ns"]), "ns"),
            Evidence("peer_wait", wait, "ns"),
            Evidence("peer_wait_share", pct(wait, span, 0.0), "%", device_span_of(dev)),
        ]
        if pct(wait, span, 0.0) < float(ctx.opt("min_late_pct")):
            return Clean(f"collectives waited for peers {pct(wait, span, 0.0)}% of the device span", tuple(evidence))
        rank = f" (rank {r['rank']})" if r.get("rank") is not None else ""
        return Fired(
            (
                self.finding(
                    f"device {dev}{rank}: its collectives waited {ms(wait)} for late peers ({pct(wait, span, 0.0)}% of "
                    "the device span, with no other kernel running): they ran far longer than their bytes need, so "
                    "another rank arrived late; this trace alone cannot say which rank, or why",
                    window=Window(device_id=dev),
                    evidence=evidence,
                    est_gain_ns=wait,
                    gain_basis="the exposed time this device's collectives ran past the transfer their bytes need "
                    "(metric comm_waits): what this rank would stop waiting if the others arrived on time",
                    fixes=(_FIND_LATE,),
                    location="straggler",
                ),
            )
        )

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

    def _late(
        self, table: list[Any], cost: tuple[int, int, int], evidence: list[Evidence], own: dict[str, Any], med: float
    ) -> Finding:
        """One rank arrives late at the collectives more than the others make it wait, with no more GPU work
        than the median device: its host holds it back, and the others wait for it. `cost`: its net lateness
        and the median device span; `own`: its device_balance row."""
        (net, late, span), s = cost, straggler(table)
        cross, more = _cross_rank(table, -1)
        work, idle, dev_span = int(own["work_ns"]), int(own["idle_ns"]), int(own["span_ns"])
        return self.finding(
            f"rank {s['rank']} (device {s['device_id']}) arrives late at the collectives: each other rank waits "
            f"{ms(net)} for it beyond what it waits for them ({pct(net, span, 0.0)}% of the median device span), "
            f"though it does no more GPU work than the others ({ms(work)} against a median of {ms(int(med))}); its "
            f"GPU idles {pct(idle, dev_span, 0.0)}% of its span waiting on its host{_capped(net, late)}{cross}",
            window=Window(device_id=int(s["device_id"])),
            evidence=evidence
            + more
            + [
                Evidence("lateness", net, "ns"),
                Evidence("recoverable_lateness", late, "ns"),
                Evidence("straggler_work_time", work, "ns"),
                Evidence("straggler_idle_share", pct(idle, dev_span, 0.0), "%", device_span_of(s["device_id"])),
            ],
            ranks=tuple(table),
            est_gain_ns=late,
            gain_basis="the other ranks' wait in the collectives this rank arrived last in, per other rank, less its "
            "own wait in the collectives they arrived last in (collectives matched across ranks; ranks that wait for "
            "each other in turn are skewed, not held back by one), at most its host's time per step beyond the other "
            "ranks' own pace (metric host_pace: their steps less the time their hosts were blocked) over its steps: "
            "what each rank would stop waiting if it arrived on time",
            fixes=(_host_fix(s),),
            location="straggler",
        )


_FIND_LATE = Fix(
    "find the rank that arrives late",
    "profile every rank over the same steps and analyze the directory of rank traces together: the collectives are "
    "matched across ranks, the late rank is named, and its own verdict says what holds it back (host work, input, "
    "more GPU work)",
    "safe",
)

_BALANCE = Fix(
    "balance work across ranks",
    "shard data/embedding tables by cost; check the slow rank for extra kernels or host interference",
    "redesign",
)


def _lateness(table: list[dict[str, Any]]) -> int:
    """The straggler's net cost to the others, per other rank: their wait in the collectives it arrived last in,
    less its own wait in theirs (0 without matched collectives). Ranks that wait for each other in turn (jitter,
    a host-bound run whose ranks drift) cancel out; a rank the others keep waiting for does not."""
    if len(table) < 2:
        return 0
    s = straggler(table)
    return max(0, int(s["cost_ns"]) // (len(table) - 1) - int(s["wait_ns"]))


def _pace_excess(ctx: Context, table: list[dict[str, Any]]) -> int | None:
    """The straggler's host time beyond the other ranks' own pace (metric host_pace: its ProfilerStep time per step
    less the median other rank's steps without their blocked time, times its steps), at least 0: the most its late
    arrivals can cost. None where a rank marks fewer than 2 steps: one captured step shows a late start, whose cause
    (the step before, work ahead of the loop) lies outside the window."""
    paces = {int(r["device_id"]): r for r in ctx.metric("host_pace") if int(r["n_steps"]) >= 2}
    dev = int(straggler(table)["device_id"])
    others = [int(r["pace_ns"]) / int(r["n_steps"]) for d, r in paces.items() if d != dev]
    if dev not in paces or len(others) < len(table) - 1:
        return None
    own = paces[dev]
    return max(0, int((int(own["step_ns"]) / int(own["n_steps"]) - statistics.median(others)) * int(own["n_steps"])))


def _capped(net: int, late: int) -> str:
    """'; its host takes X longer than the others' over its steps, ...' where the pace bound cut the lateness."""
    if late >= net:
        return ""
    return (
        f"; its host takes {ms(late)} longer over its steps than the others' own pace (their steps less the time "
        "they were blocked): the most arriving on time can save"
    )


def _host_late(
    table: list[dict[str, Any]], rows: list[dict[str, Any]], med: float, even: float
) -> dict[str, Any] | None:
    """The straggler's device_balance row where it does no more GPU work than the median device (within `even`
    %): its lateness is its host's, not its share of the work. None without matched collectives or otherwise."""
    if len(table) < 2:
        return None
    dev = int(straggler(table)["device_id"])
    own = next((r for r in rows if int(r["device_id"]) == dev), None)
    return own if own is not None and pct(int(own["work_ns"]) - med, med, 0.0) < even else None


def _not_held_back(table: list[dict[str, Any]], busiest: int) -> str | None:
    """Where collectives are matched across ranks and the busiest device arrives last at fewer than half of its
    matched collectives, the reason its extra work holds nobody back (the others do not wait for it: its kernels ran
    longer beside its own collectives waiting for a late peer, or its extra work is off the critical path); else
    None."""
    own = next((r for r in table if int(r["device_id"]) == busiest), None)
    if own is None or not int(own["n_instances"]) or 2 * int(own["n_last"]) >= int(own["n_instances"]):
        return None
    return (
        f", but it arrives last at {own['n_last']} of its {own['n_instances']} collectives matched across ranks "
        "(others do not wait for its extra work)"
    )


def _host_fix(s: dict[str, Any]) -> Fix:
    """The fix where the straggler does no more GPU work than the others: what holds its host back."""
    return Fix(
        f"find what holds rank {s['rank']}'s host back",
        f"rank {s['rank']} runs the same GPU work as the others but reaches the collectives last (its own verdict: "
        f"{s['verdict']}): look for host work only it does (logging, evaluation, gathering metrics, checkpoints on "
        "rank 0), its input pipeline, its CPU/NUMA binding and other processes on its cores; cutting the per-op host "
        "cost on every rank (CUDA graphs, torch.compile) removes the skew too",
        "safe",
    )


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
