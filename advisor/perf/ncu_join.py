"""Join Nsight Compute kernel instances to the timeline's kernels, and weight ncu by run time.

Nsight Compute knows why a kernel is slow but not whether it matters; the timeline (nsys or
Kineto) knows how much of the run each kernel takes. A match pairs the k-th ncu instance of a
(normalized name, grid, block[, NVTX context]) key with the k-th timeline kernel of that key in
start order. Names are compared after normalization because ncu prints template arguments with
C casts ("(int)128") that other demanglers drop; when even that fails, the bare function name plus
the launch configuration is tried (level "base_name"). The verdict of a matched ncu instance then
stands for every timeline kernel of its key, weighted by their share of all kernel time.

ncu usually profiles a subset of launches (-k, --launch-skip/--launch-count), so "k-th with k-th"
is an assumption; the NVTX context, when both sides have one, narrows it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor import metrics
from advisor.model.store import Run
from advisor.perf.kernel_class import ClassifiedKernel, classify_run

CAST = re.compile(r"\((?:(?:unsigned|signed|const)\s+)*[A-Za-z_][\w:]*(?:\s+(?:int|long|char|short))*\)\s*(?=[-\d])")
SPACE_AROUND = re.compile(r"\s*([<>,()*&\[\]])\s*")
INT_SUFFIX = re.compile(r"(?<=[<,(])(-?\d+)(?:ull|ul|ll|u|l)\b", re.IGNORECASE)  # 3u -> 3
BOOLS = {r"\btrue\b": "1", r"\bfalse\b": "0"}

Dims = tuple[int | None, int | None, int | None]
NO_DIMS: Dims = (None, None, None)


def normalize_name(name: str) -> str:
    """Demangled kernel name without return type, C casts on literals, spacing, or parameter list."""
    s = name.strip()
    s = re.sub(r"^void\s+", "", s)
    s = _strip_params(s)
    s = CAST.sub("", s)
    for pat, rep in BOOLS.items():
        s = re.sub(pat, rep, s)
    s = SPACE_AROUND.sub(r"\1", s)
    s = INT_SUFFIX.sub(r"\1", s)
    return re.sub(r"\s+", " ", s)


def base_name(name: str) -> str:
    """The function identifier: 'cutlass::Kernel' for 'void cutlass::Kernel<...>(Params)'."""
    s = normalize_name(name)
    cut = min((i for i in (s.find("<"), s.find("(")) if i >= 0), default=len(s))
    return s[:cut]


def short_label(name: str) -> str:
    """base_name plus the first template argument when it names a type, enough to tell wrappers apart:
    'cutlass::Kernel<cutlass::gemm::kernel::B2bGemm>' rather than two kernels both called 'cutlass::Kernel'."""
    base = base_name(name)
    s = normalize_name(name)
    if base and s.startswith(base + "<"):
        inner = s[len(base) + 1 :]
        cut = min((i for i in (inner.find("<"), inner.find(","), inner.find(">")) if i >= 0), default=len(inner))
        arg = inner[:cut].strip()
        if any(c.isalpha() for c in arg):
            return f"{base}<{arg}>"
    return base or name.strip()[:60]


def _strip_params(s: str) -> str:
    """Drop a trailing top-level '(...)' parameter list (one demangler prints it, another not)."""
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(s[i], 0)
        if depth == 0:
            return s[:i] if i > 0 and s[:i].rstrip()[-1:] not in ("", ":") else s
    return s


# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TimelineKernel:
    """One timeline kernel with what the join keys on."""

    index: int
    name: str
    device_id: int | None
    start_ns: int
    duration_ns: int
    grid: Dims
    block: Dims
    context: str | None


@dataclass(frozen=True)
class Match:
    """One ncu instance and the timeline kernel it was paired with (None: unmatched)."""

    ncu: ClassifiedKernel
    timeline: TimelineKernel | None
    level: str  # exact | normalized | base_name | none
    used_context: bool


@dataclass(frozen=True)
class KernelGroup:
    """All timeline kernels of one key, with the ncu verdict that stands for them."""

    key: tuple[Any, ...]
    name: str
    grid: Dims
    block: Dims
    count: int
    total_ns: int
    time_share: float  # of all timeline kernel time
    ncu: tuple[ClassifiedKernel, ...]
    kernel_class: str | None
    rule: str | None
    est_speedups: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    kernels: tuple[TimelineKernel, ...] = field(default_factory=tuple)  # the timeline launches, start order


@dataclass(frozen=True)
class JoinResult:
    """The join, its match rate, and ncu verdicts weighted by share of the run's GPU time."""

    matches: tuple[Match, ...]
    groups: tuple[KernelGroup, ...]
    timeline_kernel_ns: int
    reasons: dict[int, str] = field(default_factory=dict)  # ncu_id -> why it matched no timeline kernel

    def group_of(self, ncu_id: int) -> KernelGroup | None:
        """The timeline group an ncu launch stands for (None: it matched no timeline kernel)."""
        for g in self.groups:
            if any(ck.launch.ncu_id == ncu_id for ck in g.ncu):
                return g
        return None

    def unmatched(self) -> list[Match]:
        return [m for m in self.matches if m.timeline is None]

    @property
    def ncu_instances(self) -> int:
        return len(self.matches)

    @property
    def matched(self) -> int:
        return sum(1 for m in self.matches if m.timeline is not None)

    @property
    def match_rate(self) -> float:
        """Matched ncu instances / all ncu instances."""
        return self.matched / self.ncu_instances if self.matches else 0.0

    @property
    def covered_time_share(self) -> float:
        """Share of timeline kernel time in kernels that an ncu verdict stands for."""
        return sum(g.time_share for g in self.groups if g.kernel_class is not None)

    def class_shares(self) -> dict[str, float]:
        """Share of all kernel time per ncu class; 'not_profiled' for time no verdict covers."""
        out: dict[str, float] = defaultdict(float)
        for g in self.groups:
            out[g.kernel_class or "not_profiled"] += g.time_share
        return dict(out)

    def summary(self) -> dict[str, Any]:
        return {
            "ncu_instances": self.ncu_instances,
            "matched": self.matched,
            "match_rate": self.match_rate,
            "covered_time_share": self.covered_time_share,
            "timeline_kernel_ns": self.timeline_kernel_ns,
            "class_shares": self.class_shares(),
            "match_levels": _count(m.level for m in self.matches),
        }


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for i in items:
        out[i] += 1
    return dict(out)


# ------------------------------------------------------------------------------------------------
def join(ncu_run: Run, timeline_run: Run) -> JoinResult:
    """Pair the ncu run's profiled launches with the timeline run's kernels."""
    return join_kernels(classify_run(ncu_run), timeline_kernels(timeline_run), ncu_speedups(ncu_run))


def join_kernels(
    ncu: Sequence[ClassifiedKernel],
    timeline: Sequence[TimelineKernel],
    speedups: dict[int, list[dict[str, Any]]] | None = None,
) -> JoinResult:
    """The join over already-read inputs (tests build these inline)."""
    matches = match_instances(ncu, timeline)
    total = sum(t.duration_ns for t in timeline)
    groups = build_groups(matches, timeline, total, speedups or {})
    reasons = {m.ncu.launch.ncu_id: unmatched_reason(m.ncu, timeline) for m in matches if m.timeline is None}
    return JoinResult(tuple(matches), tuple(groups), total, reasons)


def unmatched_reason(ck: ClassifiedKernel, timeline: Sequence[TimelineKernel]) -> str:
    """Why an ncu launch found no timeline kernel: no such name, another launch configuration, or all taken."""
    la = ck.launch
    if not timeline:
        return "the timeline has no kernels"
    base = base_name(la.name)
    same = [t for t in timeline if base_name(t.name) == base]
    if not same:
        return (
            f"no kernel named {base or la.name!r} in the timeline ({len(timeline)} kernel launches): "
            "a different program, or a launch the timeline did not capture"
        )
    configs = sorted({(t.grid, t.block) for t in same}, key=str)
    if all((g, b) != (la.grid, la.block) for g, b in configs):
        seen = "; ".join(f"grid={g} block={b}" for g, b in configs[:3])
        return (
            f"the timeline runs {base} only with another launch configuration ({seen}; ncu profiled grid={la.grid} "
            f"block={la.block})"
        )
    return f"every timeline launch of {base} was already paired with an earlier ncu launch"


def _key(name: str, grid: Dims, block: Dims, level: str) -> tuple[Any, ...]:
    n = {"exact": name.strip(), "normalized": normalize_name(name), "base_name": base_name(name)}[level]
    return (n, grid, block)


LEVELS = ("exact", "normalized", "base_name")


def match_instances(ncu: Sequence[ClassifiedKernel], timeline: Sequence[TimelineKernel]) -> list[Match]:
    """k-th ncu instance of a key -> k-th timeline kernel of that key, trying looser keys in turn."""
    index = {level: _index(timeline, level) for level in LEVELS}
    taken: set[int] = set()
    seen: dict[tuple[Any, ...], int] = defaultdict(int)
    return [_match_one(ck, index, taken, seen) for ck in ncu]


def _index(timeline: Sequence[TimelineKernel], level: str) -> dict[tuple[Any, ...], list[TimelineKernel]]:
    """Timeline kernels by key at one normalization level, in start order (names computed once)."""
    names: dict[str, tuple[Any, ...]] = {}
    out: dict[tuple[Any, ...], list[TimelineKernel]] = defaultdict(list)
    for t in timeline:
        if t.name not in names:
            names[t.name] = _key(t.name, NO_DIMS, NO_DIMS, level)
        out[(names[t.name][0], t.grid, t.block)].append(t)
    return out


def _match_one(
    ck: ClassifiedKernel,
    index: dict[str, dict[tuple[Any, ...], list[TimelineKernel]]],
    taken: set[int],
    seen: dict[tuple[Any, ...], int],
) -> Match:
    la = ck.launch
    for level in LEVELS:
        key = _key(la.name, la.grid, la.block, level)
        # a timeline without launch configuration (older Kineto) is keyed on the name alone
        cands = index[level].get(key) or index[level].get((key[0], NO_DIMS, NO_DIMS), [])
        with_ctx = [t for t in cands if la.nvtx_context and t.context == la.nvtx_context]
        use_ctx = bool(with_ctx)
        pool = with_ctx if use_ctx else cands
        if not pool:
            continue
        seen_key = (level, use_ctx, la.nvtx_context if use_ctx else None, *key)
        k = seen[seen_key]
        seen[seen_key] += 1
        pick = pool[k] if k < len(pool) and pool[k].index not in taken else None
        pick = pick or next((t for t in pool if t.index not in taken), None)
        if pick is not None:
            taken.add(pick.index)
            return Match(ck, pick, level, use_ctx)
    return Match(ck, None, "none", False)


def build_groups(
    matches: Sequence[Match],
    timeline: Sequence[TimelineKernel],
    total_ns: int,
    speedups: dict[int, list[dict[str, Any]]],
) -> list[KernelGroup]:
    """One group per timeline (normalized name, grid, block), carrying its matched ncu verdicts."""
    by_key: dict[tuple[Any, ...], list[TimelineKernel]] = defaultdict(list)
    for t in timeline:
        by_key[_key(t.name, t.grid, t.block, "normalized")].append(t)
    ncu_by_key: dict[tuple[Any, ...], list[ClassifiedKernel]] = defaultdict(list)
    for m in matches:
        if m.timeline is not None:
            ncu_by_key[_key(m.timeline.name, m.timeline.grid, m.timeline.block, "normalized")].append(m.ncu)
    groups = [_group(k, ts, ncu_by_key.get(k, []), total_ns, speedups) for k, ts in by_key.items()]
    return sorted(groups, key=lambda g: -g.total_ns)


def _group(
    key: tuple[Any, ...],
    ts: list[TimelineKernel],
    ncu: list[ClassifiedKernel],
    total_ns: int,
    speedups: dict[int, list[dict[str, Any]]],
) -> KernelGroup:
    group_ns = sum(t.duration_ns for t in ts)
    share = group_ns / total_ns if total_ns else 0.0
    verdict = _group_verdict(ncu)
    return KernelGroup(
        key=key,
        name=ts[0].name,
        grid=ts[0].grid,
        block=ts[0].block,
        count=len(ts),
        total_ns=group_ns,
        time_share=share,
        ncu=tuple(ncu),
        kernel_class=verdict[0] if verdict else None,
        rule=verdict[1] if verdict else None,
        est_speedups=tuple(_weighted(ncu, speedups, group_ns, share)),
        kernels=tuple(ts),
    )


def _group_verdict(ncu: list[ClassifiedKernel]) -> tuple[str, str] | None:
    """The class held by most ncu time among the group's profiled instances."""
    if not ncu:
        return None
    weight: dict[tuple[str, str], float] = defaultdict(float)
    for ck in ncu:
        weight[(ck.verdict.kernel_class, ck.verdict.rule)] += float(ck.launch.duration_ns or 1)
    return max(weight, key=lambda k: weight[k])


def _weighted(
    ncu: list[ClassifiedKernel], speedups: dict[int, list[dict[str, Any]]], group_ns: int, share: float
) -> list[dict[str, Any]]:
    """Per ncu rule: mean est. speedup over the group's instances, scaled by the group's run share."""
    per_rule: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for ck in ncu:
        for s in speedups.get(ck.launch.ncu_id, []):
            per_rule[s["rule"]].append(s)
    out = []
    for rule, rows in per_rule.items():
        pct = sum(r["est_speedup_pct"] for r in rows) / len(rows)
        out.append(
            {
                "rule": rule,
                "source": "Nsight Compute",
                "est_speedup_pct": pct,
                "speedup_type": rows[0].get("speedup_type"),
                "run_pct": pct * share,
                "est_gain_ns": group_ns * pct / 100.0,
                "message": rows[0].get("message"),
            }
        )
    return out


# ------------------------------------------------------------------------------------------------
def ncu_speedups(run: Run) -> dict[int, list[dict[str, Any]]]:
    """Nsight Compute's rule results that carry an estimated speedup, by ncu_id."""
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in metrics.query(run, "ncu_rule_speedups"):
        out[int(r["ncu_id"])].append(r)
    return dict(out)


def timeline_kernels(run: Run) -> list[TimelineKernel]:
    """Every kernel of a timeline run (nsys or Kineto) in start order, with its NVTX/annotation context."""
    rows = metrics.query(run, "timeline_kernel_list")
    contexts = launch_contexts(run)
    return [
        TimelineKernel(
            index=i,
            name=r["name"],
            device_id=r["device_id"],
            start_ns=int(r["start_ns"]),
            duration_ns=int(r["end_ns"] - r["start_ns"]),
            grid=(r["grid_x"], r["grid_y"], r["grid_z"]),
            block=(r["block_x"], r["block_y"], r["block_z"]),
            context=contexts.get((r["pid"], r["correlation_id"])) if r["correlation_id"] is not None else None,
        )
        for i, r in enumerate(rows)
    ]


def launch_contexts(run: Run) -> dict[tuple[Any, Any], str]:
    """(pid, correlation_id) -> ' > '-joined NVTX / user-annotation ranges open at the launch call.

    Same spelling as ncu_kernels.nvtx_context (outermost first), so the two compare directly.
    """
    return {(r["pid"], r["correlation_id"]): r["context"] for r in metrics.query(run, "launch_contexts")}
