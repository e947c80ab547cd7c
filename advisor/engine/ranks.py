"""One finding per pattern across ranks.

A run of several ranks (a directory of rank traces) is one synchronous job: the rules look at each device,
so a pattern every rank shares (the same unfused chains, the same exposed all-reduce) comes back once per
rank. Ranks run in lockstep, so their savings overlap in wall time instead of adding: the job saves what its
worst rank saves. The findings of one rule at one place (the location without its device) on two or more
ranks become one finding: the worst rank's, its message naming how many ranks share it and which is worst,
with every rank's gain and message in `ranks`. A run with one rank (or no rank recorded) is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from advisor import metrics
from advisor.model.store import Run
from advisor.rules.base import Finding

_DEVICE = re.compile(r"(^|\|)device=-?\d+")


def device_ranks(run: Run) -> dict[int, int]:
    """device_id -> rank for the devices whose rank the trace records."""
    rows = metrics.query(run, "device_names")
    return {int(d["device_id"]): int(d["rank"]) for d in rows if d["rank"] is not None and d["device_id"] is not None}


def place(f: Finding) -> str:
    """The finding's location without its device: the same place on every rank."""
    return _DEVICE.sub("", f.location).lstrip("|")


def groupable(f: Finding, ranks: Mapping[int, int]) -> bool:
    """Whether `f` is one rank's instance of a pattern other ranks may share: on a device with a rank, its
    location naming the device, not already merged."""
    return f.window.device_id in ranks and bool(_DEVICE.search(f.location)) and not f.ranks


def across_ranks(findings: Sequence[Finding], ranks: Mapping[int, int]) -> list[Finding]:
    """`findings` with each rule's per-rank findings at one place merged into one (see the module doc)."""
    if len(set(ranks.values())) < 2:
        return list(findings)
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        if groupable(f, ranks):
            groups.setdefault((f.code, place(f)), []).append(f)
    merged = {id(g[0]): _merge(g, ranks) for g in groups.values() if len({x.window.device_id for x in g}) > 1}
    drop = {id(f) for g in groups.values() if len({x.window.device_id for x in g}) > 1 for f in g[1:]}
    return [merged.get(id(f), f) for f in findings if id(f) not in drop]


def worse(a: Finding, b: Finding) -> bool:
    """Whether `a` is a worse instance than `b` (more gain; on a tie, the lower device): the one a merge keeps."""
    return (a.est_gain_ns, -(a.window.device_id or 0)) > (b.est_gain_ns, -(b.window.device_id or 0))


def rank_row(f: Finding, rank: int) -> dict[str, Any]:
    """One rank's row in a merged finding's per-rank table."""
    return {"rank": rank, "device_id": f.window.device_id, "est_gain_ns": f.est_gain_ns, "message": f.message}


def _merge(group: list[Finding], ranks: Mapping[int, int]) -> Finding:
    worst = group[0]
    for f in group[1:]:
        worst = f if worse(f, worst) else worst
    by_rank = sorted(group, key=lambda f: ranks[f.window.device_id or 0])
    rows = [rank_row(f, ranks[f.window.device_id or 0]) for f in by_rank]
    return merged(worst, rows, len(set(ranks.values())))


def merged(worst: Finding, rows: Sequence[Mapping[str, Any]], n_ranks: int) -> Finding:
    """The one finding of a pattern on several ranks: the worst rank's, naming how many ranks share it, with every
    rank's row (rank order)."""
    dev = worst.window.device_id
    rank = next(r["rank"] for r in rows if r["device_id"] == dev)
    return replace(
        worst,
        message=f"on {len(rows)} of {n_ranks} ranks (worst: rank {rank}): {worst.message}",
        gain_basis=f"{worst.gain_basis}; the worst of {len(rows)} ranks: ranks run in lockstep, so their savings "
        "overlap in wall time instead of adding",
        location=f"ranks|{place(worst)}".rstrip("|"),
        ranks=tuple(rows),
    )
