"""Build an N-rank Kineto run from one real rank trace, with injected stragglers, clock offsets and slow links.

    python benchmarks/ranks.py TEMPLATE OUT_DIR --ranks 64 [--straggler 5:500] [--offset-us 2000] [--slow 3:4]
                                                           [--jitter-us 20] [--seed 0]

TEMPLATE is one rank file of a real multi-rank capture (param/dlrm_8rank/worker0_*.json.gz, a rank of
fixtures/kineto/CO001_*, the TraceLens MI300X DDP trace); every generated rank is a copy of it, so ids,
process groups and the collective sequence are the template's and agree across ranks. Only the
communication kernels (NCCL/RCCL, in start order: the n-th is one collective instance on every rank) are
rewritten, on a model with known answers:

- instance i starts on every rank at the template's start a_i plus a seeded jitter in [0, jitter) us, plus
  D us on a straggler rank (`--straggler RANK:D`);
- its transfer takes T_i us, the template's kernel duration, times F on a slow link (`--slow I:F`: every
  instance whose ordinal is a multiple of I);
- every rank leaves it together, at the last arrival plus T_i (plus under 1 us of end jitter), so each rank
  waits max(arrival) - its arrival;
- every event of rank r is then shifted by its clock offset o_r, seeded in [-offset, offset] us (rank 0: 0);
- each rank is its own process, as in a real run: the template's host process ids (those of its CPU ops,
  runtime calls and annotations) become pid + r, so a directory read never takes two ranks' host threads for
  one process.

`generate` returns the truth (per rank: offset, transfer, wait, what its late arrivals cost the others),
which the tests compare with what the advisor recovers.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Truth:
    """What was injected, per rank, in template time units converted to ns."""

    offsets_ns: dict[int, int] = field(default_factory=dict)
    transfer_ns: dict[int, int] = field(default_factory=dict)
    wait_ns: dict[int, int] = field(default_factory=dict)
    cost_ns: dict[int, int] = field(default_factory=dict)  # the others' wait in instances the rank arrived last in
    instances: int = 0


@dataclass(frozen=True)
class Spec:
    ranks: int
    stragglers: dict[int, float] = field(default_factory=dict)  # rank -> delay in us
    offset_us: float = 0.0
    slow_every: int = 0
    slow_factor: float = 1.0
    jitter_us: float = 0.0
    seed: int = 0


def _is_comm(e: dict[str, Any]) -> bool:
    name = str(e.get("name", "")).lower()
    return e.get("cat") == "kernel" and ("nccl" in name or "rccl" in name)


HOST_CATS = ("cpu_op", "cuda_runtime", "cuda_driver", "python_function", "user_annotation", "Trace")


def _host_pids(events: list[dict[str, Any]]) -> set[int]:
    """The template's host process ids (GPU events' pid is the device)."""
    return {e["pid"] for e in events if e.get("cat") in HOST_CATS and isinstance(e.get("pid"), int)}


def _load(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def _arrivals(spec: Spec, comm: list[dict[str, Any]], rng: random.Random) -> list[list[float]]:
    """arrivals[i][r]: when rank r reaches instance i (template clock, us)."""
    return [
        [float(k["ts"]) + rng.uniform(0, spec.jitter_us) + spec.stragglers.get(r, 0.0) for r in range(spec.ranks)]
        for k in comm
    ]


def _transfers(spec: Spec, comm: list[dict[str, Any]]) -> list[float]:
    slow = spec.slow_every
    return [float(k["dur"]) * (spec.slow_factor if slow and i % slow == 0 else 1.0) for i, k in enumerate(comm)]


def _truth(spec: Spec, arrivals: list[list[float]], transfers: list[float], offsets: list[float]) -> Truth:
    t = Truth(instances=len(transfers))
    for r in range(spec.ranks):
        t.offsets_ns[r] = round(offsets[r] * 1000)
        t.transfer_ns[r] = round(sum(transfers) * 1000)
        t.wait_ns[r] = round(sum(max(a) - a[r] for a in arrivals) * 1000)
        t.cost_ns[r] = 0
    for a in arrivals:
        last = max(range(spec.ranks), key=lambda r: (a[r], -r))
        t.cost_ns[last] += round(sum(max(a) - x for x in a) * 1000)
    return t


def generate(template: Path, out: Path, spec: Spec) -> Truth:
    """Write `spec.ranks` rank files under `out` (rank00000.json.gz, ...) and return the injected truth."""
    doc = _load(template)
    events = doc["traceEvents"]
    comm = sorted((e for e in events if _is_comm(e) and "dur" in e), key=lambda e: float(e["ts"]))
    integer = all(isinstance(e.get("ts"), int) for e in events if "ts" in e)
    rng = random.Random(spec.seed)
    arrivals, transfers = _arrivals(spec, comm, rng), _transfers(spec, comm)
    offsets = [0.0] + [rng.uniform(-spec.offset_us, spec.offset_us) for _ in range(spec.ranks - 1)]
    if integer:
        offsets = [float(round(o)) for o in offsets]
        arrivals = [[float(round(x)) for x in a] for a in arrivals]
    ends = [max(a) + t for a, t in zip(arrivals, transfers, strict=True)]
    out.mkdir(parents=True, exist_ok=True)
    index = {id(k): i for i, k in enumerate(comm)}
    host = _host_pids(events)
    for r in range(spec.ranks):
        _write_rank(out / f"rank{r:05d}.json.gz", doc, spec, r, (arrivals, ends, offsets, index, host), integer, rng)
    return _truth(spec, arrivals, transfers, offsets)


def _write_rank(
    path: Path, doc: dict[str, Any], spec: Spec, r: int, plan: tuple[Any, ...], integer: bool, rng: random.Random
) -> None:
    arrivals, ends, offsets, index, host = plan
    fmt = (lambda x: round(x)) if integer else (lambda x: round(x, 3))
    evs = []
    for e0 in doc["traceEvents"]:
        e = dict(e0)
        i = index.get(id(e0))
        if i is not None:
            start = arrivals[i][r]
            end = ends[i] + (0.0 if integer else rng.uniform(0, 0.5))
            e["ts"], e["dur"] = fmt(start + offsets[r]), fmt(end - start)
        elif "ts" in e and isinstance(e["ts"], int | float):
            e["ts"] = fmt(float(e["ts"]) + offsets[r])
        if e.get("pid") in host:
            e["pid"] = e["pid"] + r
        evs.append(e)
    info = dict(doc.get("distributedInfo") or {}, rank=r, world_size=spec.ranks)
    out = {k: v for k, v in doc.items() if k not in ("traceEvents", "baseTimeNanoseconds")}
    out |= {"distributedInfo": info, "traceEvents": evs}
    with gzip.open(path, "wt", compresslevel=1) as f:
        json.dump(out, f)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("template", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--straggler", action="append", default=[], help="RANK:DELAY_US")
    ap.add_argument("--offset-us", type=float, default=0.0)
    ap.add_argument("--slow", default="", help="EVERY:FACTOR (instances whose ordinal is a multiple of EVERY)")
    ap.add_argument("--jitter-us", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    every, factor = (int(a.slow.split(":")[0]), float(a.slow.split(":")[1])) if a.slow else (0, 1.0)
    stragglers = {int(s.split(":")[0]): float(s.split(":")[1]) for s in a.straggler}
    spec = Spec(a.ranks, stragglers, a.offset_us, every, factor, a.jitter_us, a.seed)
    t = generate(a.template, a.out, spec)
    print(json.dumps({"instances": t.instances, "cost_ns": t.cost_ns, "offsets_ns": t.offsets_ns}))


if __name__ == "__main__":
    main()
