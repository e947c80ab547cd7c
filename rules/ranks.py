"""Cross-rank facts the communication rules share: the per-rank table and the per-rank verdict distribution.

A run of several ranks (a directory of rank traces) is one synchronous job: every collective completes when
its last rank arrives, so the ranks that wait and the rank they wait for are one pattern, reported once with
a row per rank, not once per rank. The numbers come from the metrics `rank_comm` (collectives matched across
ranks: transfer vs waiting for peers, arrivals, what each rank's late arrivals cost the others, its clock
offset) and `device_balance` (work time per device); each rank's own verdict from the device verdicts.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from advisor.rules.base import Context


def rank_table(ctx: Context) -> list[dict[str, Any]]:
    """One row per rank with matched collectives, ordered by rank: its communication split, arrivals, cost to
    the others, clock offset against the reference rank, work time, own verdict class, and whether it waits for
    peers longer than it works (`waiting`: its measured peer wait in matched collectives exceeds its
    non-communication GPU time; its own verdict, which leaves peer wait unscored, then names only what it does
    while it works). Empty where fewer than two ranks have collectives matched across them."""
    comm = ctx.metric("rank_comm")
    if len(comm) < 2:
        return []
    work = {int(r["device_id"]): int(r["work_ns"]) for r in ctx.metric("device_balance")}
    verdicts = _device_classes(ctx)
    keep = ("rank", "device_id", "comm_ns", "transfer_ns", "wait_ns", "n_instances", "n_last", "n_first", "cost_ns")
    return [
        {k: r[k] for k in keep}
        | {
            "clock_offset_ns": r["clock_offset_ns"],
            "clock_residual_ns": r["clock_residual_ns"],
            "work_ns": work.get(int(r["device_id"])),
            "verdict": verdicts.get(int(r["device_id"]), "unknown"),
            "waiting": int(r["wait_ns"]) > work.get(int(r["device_id"]), 0),
        }
        for r in comm
    ]


# Context cache key of each device's own verdict class: computed from the run here, or given by a caller that
# has them already (a Dask reduce, whose run holds only the per-rank rows: advisor.distributed.combine)
DEVICE_CLASSES = "_ranks_device_classes"


def _device_classes(ctx: Context) -> dict[int, str]:
    """device_id -> its own verdict class (the same device verdicts the run's verdict reports)."""
    from advisor.rules.classify import classify

    key = DEVICE_CLASSES
    if key not in ctx._cache:
        ctx._cache[key] = {d.device_id: d.verdict.class_ for d in classify(ctx.run, max_ranges=0).devices}
    return dict(ctx._cache[key])


def straggler(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The rank whose late arrivals cost the others most (ties: arrived last more often, then lowest rank)."""
    return max(rows, key=lambda r: (int(r["cost_ns"]), int(r["n_last"]), -int(r["rank"])))


def verdict_distribution(rows: list[dict[str, Any]]) -> str:
    """'1 rank compute-bound (rank 1: the straggler), 1 rank waiting for peers longer than it works (rank 0)':
    ranks per own verdict class, a rank that mostly waits for peers as its own group, largest group first,
    naming the ranks of groups of up to four and the straggler among them."""
    late = straggler(rows)["rank"] if rows else None
    by = Counter(_group(r, late) for r in rows)
    parts = []
    for what, n in sorted(by.items(), key=lambda kv: (-kv[1], kv[0])):
        members = [r for r in rows if _group(r, late) == what]
        ranks = [f"{r['rank']}{': the straggler' if r['rank'] == late else ''}" for r in members]
        named = f" ({'rank' if n == 1 else 'ranks'} {', '.join(ranks)})" if n <= 4 else ""
        if what == "waiting":
            what = f"waiting for peers longer than {'it works' if n == 1 else 'they work'}"
        parts.append(f"{n} {'rank' if n == 1 else 'ranks'} {what}{named}")
    return ", ".join(parts)


def _group(row: dict[str, Any], straggler_rank: Any) -> str:
    """The distribution group of a rank: 'waiting' (it waits for peers longer than it works; never the straggler),
    else its own verdict class, '<class>-bound'."""
    return "waiting" if row.get("waiting") and row["rank"] != straggler_rank else f"{row['verdict']}-bound"
