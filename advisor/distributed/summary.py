"""The run's summary facts (the `analyze` JSON's devices, counts, capture, time, top_kernels, ranges, copies,
api and families) on the Dask path, from a compact summary of each rank folded in the driver.

Each rank's task computes `rank_summary` on its slice of the directory read (advisor.distributed.rankrun:
device ids and clocks as the directory read gives them), and the driver folds them (`SummaryFold`) into the
same figures advisor.engine.summary computes over the whole run:

- per-device sections (devices, time, copies, families) are the ranks' rows side by side, in device order;
- counts are sums, but for `strings`, the distinct strings of every rank (the directory read interns them once),
  each handed on as its 128-bit BLAKE2b digest (a collision, which would count two strings as one, is
  less likely than 2**-88 at a million strings);
- the capture span is the run's, which every rank's slice already carries;
- top kernels, host API and range groups are summed per name, and their quantiles (p50, p95) come from each
  name's durations counted per exact value (a histogram, exact as the quantile over every instance); a
  range group's covered time is the union of its ranks' spans (their unions merged, overlap counted once).

What the driver keeps grows with the distinct names, durations and disjoint range spans, not with the ranks
(copies of one template add nothing but their devices' rows).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor import metrics
from advisor.metrics.intervals import union
from advisor.model.store import Run

Histogram = dict[int, int]  # exact duration (ns) -> how many
GroupKey = tuple[str, str]  # range source, name


@dataclass
class RangeParts:
    """One range group on one rank (or folded over ranks): disjoint spans, durations, shallowest depth."""

    spans: list[tuple[int, int]]
    durations: Histogram
    min_depth: int

    def fold(self, other: RangeParts) -> None:
        self.spans = union(self.spans + other.spans)
        _add(self.durations, other.durations)
        self.min_depth = min(self.min_depth, other.min_depth)


@dataclass(frozen=True)
class RankSummary:
    """What one rank hands on for the run's summary (see the module doc)."""

    devices: tuple[dict[str, Any], ...]
    counts: dict[str, int]
    strings: frozenset[bytes]  # digests of the rank's distinct strings (see the module doc)
    capture: dict[str, Any]
    time: tuple[dict[str, Any], ...]
    kernels: dict[str, Histogram]  # kernel name -> durations
    ranges: dict[GroupKey, RangeParts]
    steps: Histogram  # profiler steps: host range duration -> how many
    steps_gpu: Histogram  # the same steps timed on their GPU side (metric step_durations)
    copies: tuple[dict[str, Any], ...]
    api: tuple[dict[str, Any], ...]  # every (api, name) row of api_summary
    families: tuple[dict[str, Any], ...]


def rank_summary(run: Run) -> RankSummary:
    """The rank's compact summary, on its slice of the directory read (a Dask task)."""
    from advisor.engine import summary as s

    kernels: dict[str, Histogram] = {}
    for r in metrics.query(run, "kernel_durations"):
        kernels.setdefault(str(r["name"]), {})[int(r["dur_ns"])] = int(r["n"])
    groups: dict[GroupKey, list[tuple[int, int, int]]] = {}
    for r in metrics.query(run, "range_spans"):
        groups.setdefault((str(r["source"]), str(r["name"])), []).append((int(r["start_ns"]), int(r["end_ns"]),
                                                                          int(r["depth"])))
    ranges = {k: RangeParts(union((a, b) for a, b, _ in v), _histogram(b - a for a, b, _ in v), min(d for *_, d in v))
              for k, v in groups.items()}
    steps: Counter[int] = Counter()
    steps_gpu: Counter[int] = Counter()
    for r in metrics.query(run, "step_durations"):
        steps[int(r["dur_ns"])] += int(r["n"])
        steps_gpu[int(r["gpu_ns"])] += int(r["n"])
    return RankSummary(
        tuple(s.devices(run)), s.counts(run), _digests(str(r[0]) for r in run.sql_rows("SELECT value FROM strings")),
        s.capture_span(run), tuple(s.time_split(run)), kernels, ranges, dict(steps), dict(steps_gpu),
        tuple(s.copies(run)), tuple(s.api_summary(run, limit=1 << 62)["items"]), tuple(s.family_time(run)),
    )


def _digests(values: Iterable[str]) -> frozenset[bytes]:
    from hashlib import blake2b

    return frozenset(blake2b(v.encode("utf-8", "surrogatepass"), digest_size=16).digest() for v in values)


def _histogram(values: Any) -> Histogram:
    return dict(Counter(int(v) for v in values))


def _add(into: Histogram, h: Mapping[int, int]) -> None:
    for v, n in h.items():
        into[v] = into.get(v, 0) + n


def quantile_cont(h: Mapping[int, int], q: float) -> float:
    """DuckDB's quantile_cont over the values `h` counts: interpolated between the two values around
    (n - 1) * q in sorted order, as DuckDB computes it in doubles: lo * (1 - d) + hi * d, d the fraction (the
    other way round, lo + (hi - lo) * d, differs in the last bit on a quarter of random inputs)."""
    n = sum(h.values())
    pos = (n - 1) * q
    lo_i, hi_i = math.floor(pos), math.ceil(pos)
    lo = hi = None
    seen = 0
    for v in sorted(h):
        seen += h[v]
        if lo is None and seen > lo_i:
            lo = v
        if seen > hi_i:
            hi = v
            break
    assert lo is not None and hi is not None
    d = pos - lo_i
    return float(lo) if lo_i == hi_i else float(lo) * (1 - d) + float(hi) * d


@dataclass
class SummaryFold:
    """Every rank's summary folded (see the module doc); `facts` gives advisor.engine.summary's sections."""

    devices: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    strings: set[bytes] = field(default_factory=set)
    capture: dict[str, Any] | None = None
    time: list[dict[str, Any]] = field(default_factory=list)
    kernels: dict[str, Histogram] = field(default_factory=dict)
    ranges: dict[GroupKey, RangeParts] = field(default_factory=dict)
    steps: Histogram = field(default_factory=dict)
    steps_gpu: Histogram = field(default_factory=dict)
    copies: list[dict[str, Any]] = field(default_factory=list)
    api: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # (api, name) -> calls, total, max
    families: list[dict[str, Any]] = field(default_factory=list)

    def add(self, r: RankSummary) -> None:
        self.devices += r.devices
        self.time += r.time
        self.copies += r.copies
        self.families += r.families
        for k, v in r.counts.items():
            self.counts[k] = self.counts.get(k, 0) + v
        self.strings |= r.strings
        self.capture = self.capture or r.capture
        for name, h in r.kernels.items():
            _add(self.kernels.setdefault(name, {}), h)
        for key, parts in r.ranges.items():
            if key in self.ranges:
                self.ranges[key].fold(parts)
            else:
                self.ranges[key] = RangeParts(list(parts.spans), dict(parts.durations), parts.min_depth)
        _add(self.steps, r.steps)
        _add(self.steps_gpu, r.steps_gpu)
        for a in r.api:
            got = self.api.setdefault((a["api"], a["name"]), [0, 0, 0])
            got[0] += a["calls"]
            got[1] += a["total_ns"]
            got[2] = max(got[2], a["max_ns"])

    def facts(self, top: int = 10) -> dict[str, Any]:
        """The sections advisor.engine.summary.summarize gives (all but `input`), over every folded rank."""
        from advisor.engine.summary import API_OF

        by_dev = _by_device
        api = sorted(self.api.items(), key=lambda kv: (-kv[1][1], kv[0][1]))[:15]
        return {
            "devices": by_dev(self.devices), "counts": self._counts(), "capture": self.capture or {},
            "time": by_dev(self.time), "top_kernels": self._top_kernels(top), "ranges": self._ranges(),
            "copies": by_dev(self.copies),
            "api": {"of": API_OF, "items": [{"api": a, "name": n, "calls": c, "total_ns": t, "max_ns": m}
                                            for (a, n), (c, t, m) in api]},
            "families": by_dev(self.families),
        }

    def _counts(self) -> dict[str, int]:
        return {k: (len(self.strings) if k == "strings" else v) for k, v in self.counts.items()}

    def _top_kernels(self, limit: int) -> dict[str, Any]:
        from advisor.vocab import share

        stats = [(name, sum(h.values()), sum(v * n for v, n in h.items()), h) for name, h in self.kernels.items()]
        all_ns = sum(t for _, _, t, _ in stats)
        of = "sum of all kernel durations, all devices"
        items = [{"name": name, "count": count, "total": share(total, all_ns, of), "mean_ns": round(total / count),
                  "p50_ns": round(quantile_cont(h, 0.5)), "p95_ns": round(quantile_cont(h, 0.95)), "max_ns": max(h)}
                 for name, count, total, h in sorted(stats, key=lambda x: (-x[2], x[0]))[:limit]]
        return {"total_kernel_ns": all_ns if items else 0, "of": of, "items": items}

    def _ranges(self, limit: int = 15) -> dict[str, Any]:
        from advisor.vocab import share

        span = (self.capture or {}).get("span_ns") or 0
        of = "capture span (first to last event of the run)"
        rows = []
        for (source, name), p in self.ranges.items():
            count = sum(p.durations.values())
            total = sum(v * n for v, n in p.durations.items())
            covered = sum(b - a for a, b in p.spans)
            rows.append((covered, total, name, {
                "source": source, "name": name, "count": count, "covered": share(covered, span, of),
                "total_ns": total, "mean_ns": round(total / count), "p50_ns": round(quantile_cont(p.durations, 0.5)),
                "p95_ns": round(quantile_cont(p.durations, 0.95)), "top_level": p.min_depth == 0}))
        items = [r[3] for r in sorted(rows, key=lambda r: (-r[0], -r[1], r[2]))[:limit]]
        return {"total_ranges": self.counts.get("ranges", 0), "items": items, "steps": self._steps()}

    def _steps(self) -> dict[str, Any] | None:
        count = sum(self.steps.values())
        if not count:
            return None
        return {"count": count, **_stats(self.steps, count), "gpu": _stats(self.steps_gpu, count)}


def _stats(h: Histogram, count: int) -> dict[str, int]:
    """profiler_step_stats' figures of the `count` durations `h` holds."""
    total = sum(v * n for v, n in h.items())
    return {"total_ns": total, "mean_ns": round(total / count), "p50_ns": round(quantile_cont(h, 0.5)),
            "p95_ns": round(quantile_cont(h, 0.95)), "min_ns": min(h), "max_ns": max(h)}


def _by_device(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ranks' per-device rows in device order (each rank's own order kept within a device)."""
    return sorted(rows, key=lambda r: r["device_id"])
