"""Shared by the Nsight Compute rules (ME001-ME004, CP002): launch grouping, Nsight Compute's own
speedup estimates, and the estimated gain with its basis.

An ncu report profiles a few launches in depth. Launches of the same kernel (normalized name, grid,
block) are one finding: counters are summed over them, ratios come from the longest launch, and the
gain is summed per launch. The gain of a launch is its duration x the fraction of it the fix can
recover. When Nsight Compute's own rules estimated a speedup for the same problem, that figure is
used and attributed to Nsight Compute; otherwise the rule's own fraction is. Either way the gain is
per ncu run: when an ncu run is joined to a timeline (advisor.perf.join), the same fraction applies
to the kernel's share of the run's GPU time instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from advisor.perf.ncu_join import base_name, normalize_name
from advisor.rules.base import Context, Evidence, Window, pct

NCU_REQUIRES = frozenset({"ncu_kernels", "ncu_metrics"})
PROFILED_OF = "kernel time of all launches in this ncu report"
NSIGHT_OF = "kernel duration (Nsight Compute)"


@dataclass(frozen=True)
class KernelGroup:
    """Profiled launches of one kernel configuration."""

    key: str
    name: str
    rows: tuple[dict[str, Any], ...]

    @property
    def rep(self) -> dict[str, Any]:
        """The longest launch: where ratios and throughputs are read."""
        return max(self.rows, key=lambda r: float(r.get("duration_ns") or 0))

    @property
    def duration_ns(self) -> int:
        return sum(int(r.get("duration_ns") or 0) for r in self.rows)

    @property
    def launches(self) -> int:
        return len(self.rows)

    def total(self, column: str) -> float | None:
        """Sum of a counter over the launches (None when no launch has it)."""
        vals = [float(r[column]) for r in self.rows if r.get(column) is not None]
        return sum(vals) if vals else None

    @property
    def short_name(self) -> str:
        return base_name(self.name) or self.name[:60]

    @property
    def window(self) -> Window:
        dev = self.rep.get("device_id")
        return Window(device_id=int(dev) if dev is not None else None)

    @property
    def location(self) -> str:
        return f"device={self.rep.get('device_id')}|kernel={self.key}"


def group_launches(rows: Iterable[dict[str, Any]]) -> list[KernelGroup]:
    """Launches grouped by (normalized name, grid, block), in first-launch order."""
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        grid = (r.get("grid_x"), r.get("grid_y"), r.get("grid_z"))
        block = (r.get("block_x"), r.get("block_y"), r.get("block_z"))
        by_key[f"{normalize_name(str(r.get('name') or ''))}|grid={grid}|block={block}"].append(r)
    return [KernelGroup(k, str(rs[0].get("name") or ""), tuple(rs)) for k, rs in by_key.items()]


def profiled_ns(groups: Iterable[KernelGroup]) -> int:
    return sum(g.duration_ns for g in groups)


def share_evidence(group: KernelGroup, total_ns: int) -> list[Evidence]:
    """Kernel time and its share of the profiled time (the per-ncu-run weight)."""
    return [
        Evidence("kernel_time", group.duration_ns, "ns"),
        Evidence("launches", group.launches, "count"),
        Evidence("kernel_share_of_profiled", pct(group.duration_ns, total_ns), "%", PROFILED_OF),
    ]


def nsight_speedups(ctx: Context, rules: tuple[str, ...]) -> dict[int, dict[str, Any]]:
    """Nsight Compute's largest estimated speedup among `rules`, by ncu_id."""
    return {int(r["ncu_id"]): r for r in ctx.metric("ncu_speedups", rules=list(rules))}


@dataclass(frozen=True)
class Gain:
    """Estimated saving of one kernel group and how it was computed."""

    ns: float
    basis: str
    evidence: tuple[Evidence, ...]


def estimate_gain(
    group: KernelGroup,
    own_fraction: Callable[[dict[str, Any]], float],
    own_basis: str,
    nsight: dict[int, dict[str, Any]],
    max_fraction: float,
) -> Gain:
    """Sum over launches of duration x recoverable fraction (Nsight Compute's when it gave one), capped."""
    total = 0.0
    used_ncu: list[dict[str, Any]] = []
    own_total = 0.0
    for r in group.rows:
        dur = float(r.get("duration_ns") or 0)
        own = min(max(own_fraction(r), 0.0), max_fraction)
        own_total += dur * own
        ncu = nsight.get(int(r["ncu_id"]))
        if ncu is not None:
            used_ncu.append(ncu)
            total += dur * min(float(ncu["est_speedup_pct"]) / 100.0, max_fraction)
        else:
            total += dur * own
    ev = [Evidence("advisor_est_gain", round(own_total), "ns")]
    if used_ncu:
        top = max(used_ncu, key=lambda n: float(n["est_speedup_pct"]))
        ev += [
            Evidence("ncu_rule", str(top["ncu_rule"]), "Nsight Compute rule"),
            Evidence("ncu_est_speedup", round(float(top["est_speedup_pct"]), 1), "%", NSIGHT_OF),
        ]
        basis = (
            f"kernel time x Nsight Compute's estimated speedup ({top['ncu_rule']}: "
            f"{float(top['est_speedup_pct']):.1f}% of the kernel, attributed to Nsight Compute), capped at "
            f"{max_fraction:.0%}; advisor's own estimate ({own_basis}) is {own_total / 1e3:.1f} us"
        )
    else:
        basis = f"kernel time x {own_basis}, capped at {max_fraction:.0%} (no Nsight Compute estimate in the report)"
    return Gain(total, basis + "; per ncu run, not weighted by a timeline", tuple(ev))


def num(row: dict[str, Any], column: str) -> float | None:
    v = row.get(column)
    return float(v) if v is not None else None


def maybe(name: str, value: float | int | str | None, unit: str, of: str | None = None) -> list[Evidence]:
    """[Evidence] when the report had the number, [] when it did not (evidence never holds None)."""
    return [] if value is None else [Evidence(name, value, unit, of)]
