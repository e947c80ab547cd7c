"""The rank view of a many-rank run: a ranks x steps heat map of step time and wait for peers, and the
collectives of the straggler against the fastest rank on one aligned clock (issue 20's rank view).

Numbers come from metrics only: `rank_steps` (per rank and step: its time and its matched wait), `rank_comm`
(who costs the others most: the straggler; who waits most: the fastest) and `collective_instances` with the
`rank_clocks` offsets, so the two ranks' collectives are drawn on the reference rank's clock, never on raw
clocks of different hosts. The surfaces (TUI, HTML) only draw what `rank_view` returns.
"""

from __future__ import annotations

from typing import Any

from advisor import metrics
from advisor.model.store import Run
from advisor.rules.ranks import straggler

MAX_STEPS = 64  # heat map columns: the first steps of a long capture
MAX_RANKS = 256  # heat map rows: the ranks with most wait for peers, then the straggler, in rank order
MAX_COLLECTIVES = 400  # timeline bars per rank


def rank_view(run: Run, max_steps: int = MAX_STEPS, max_ranks: int = MAX_RANKS) -> dict[str, Any]:
    """{available, reason} and, where two or more ranks have collectives matched across them: `ranks`, `steps`,
    `step_ns` and `wait_ns` (rows per rank, one value per step, None where the rank has no such step), the
    `straggler` and `fastest` rank, and `timeline` (each one's collectives on the reference rank's clock)."""
    comm = metrics.query(run, "rank_comm") if run.count("collectives") else []
    if len(comm) < 2:
        return {"available": False, "reason": "not available: fewer than two ranks with collectives matched "
                "across them (a directory of rank traces, one per rank, with NCCL/RCCL kernels)"}
    slow = straggler(comm)
    fast = max(comm, key=lambda r: (int(r["wait_ns"]), -int(r["rank"])))
    shown = _shown(comm, slow, max_ranks)
    cells = [r for r in metrics.query(run, "rank_steps") if int(r["step"]) <= max_steps and int(r["rank"]) in shown]
    steps = sorted({int(r["step"]) for r in cells})
    grid = {(int(r["rank"]), int(r["step"])): r for r in cells}
    ranks = sorted(shown)
    return {
        "available": True, "reason": "",
        "ranks": ranks, "ranks_total": len(comm), "steps": steps,
        "step_ns": [[_get(grid, k, s, "step_ns") for s in steps] for k in ranks],
        "wait_ns": [[_get(grid, k, s, "wait_ns") for s in steps] for k in ranks],
        "straggler": int(slow["rank"]), "straggler_cost_ns": int(slow["cost_ns"]), "fastest": int(fast["rank"]),
        "timeline": {"straggler": _collectives(run, int(slow["rank"])),
                     "fastest": _collectives(run, int(fast["rank"]))},
    }


def _shown(comm: list[dict[str, Any]], slow: dict[str, Any], limit: int) -> set[int]:
    """The ranks drawn: every rank up to `limit`, else the straggler and the ranks that wait most."""
    if len(comm) <= limit:
        return {int(r["rank"]) for r in comm}
    most = sorted(comm, key=lambda r: (-int(r["wait_ns"]), int(r["rank"])))[: limit - 1]
    return {int(slow["rank"])} | {int(r["rank"]) for r in most}


def _get(grid: dict[tuple[int, int], dict[str, Any]], rank: int, step: int, key: str) -> int | None:
    row = grid.get((rank, step))
    return int(row[key]) if row is not None else None


def _collectives(run: Run, rank: int) -> list[dict[str, Any]]:
    """The rank's matched collectives in order, on the reference rank's clock (its rank_clocks offset removed):
    start (its arrival), end, its wait for peers and the transfer."""
    offset = {int(r["rank"]): int(r["offset_ns"] or 0) for r in metrics.query(run, "rank_clocks")}.get(rank, 0)
    rows = [r for r in metrics.query(run, "collective_instances") if int(r["rank"]) == rank]
    rows.sort(key=lambda r: (int(r["start_ns"]), r["comm_key"], int(r["seq"])))
    return [
        {"seq": int(r["seq"]), "comm_key": r["comm_key"], "kind": r["kind"], "start_ns": int(r["start_ns"]) - offset,
         "end_ns": int(r["end_ns"]) - offset, "wait_ns": int(r["wait_ns"]), "transfer_ns": int(r["transfer_ns"]),
         "last_arrival": bool(r["last_arrival"])}
        for r in rows[:MAX_COLLECTIVES]
    ]
