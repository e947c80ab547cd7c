"""`advisor analyze RUN_DIR --workers N | --scheduler ADDRESS` and `advisor diff BASE NEW --workers N`: the
analysis of a directory of rank traces with the per-rank work on Dask (one rank per task) and the reduce in this
process: the same findings, verdict and headline as the single-process path, the per-rank verdict
distribution and the cross-rank tables. A failed rank is named under `failed_ranks`."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from advisor import DISTRIBUTION
from advisor.errors import InputError


@contextmanager
def dask_client(workers: int | None, scheduler: str | None) -> Iterator[Any]:
    """A Dask client for the run (a LocalCluster of `workers` processes, or the scheduler's cluster), closed
    after; Dask missing is an input error with the extra to install."""
    from advisor.distributed import mapreduce

    try:
        client = mapreduce.client_for(workers, scheduler)
    except ImportError as e:
        hint = f"pip install '{DISTRIBUTION}[distributed]'"
        raise InputError(f"--workers/--scheduler need Dask: {e}", hint) from None
    try:
        yield client
    finally:
        cluster = getattr(client, "cluster", None)
        client.close()
        if cluster is not None:
            cluster.close()


def analyze_dir(path: str, client: Any, rules: bool, options: Mapping[str, Mapping[str, Any]] | None,
                select: set[str] | None) -> dict[str, Any]:
    """One directory's document: the analysis (with rules), the per-rank verdicts and tables, failed ranks."""
    from advisor.distributed import mapreduce
    from advisor.distributed.combine import distribution
    from advisor.model.store import default_cache_dir
    from advisor.parsers.kineto.merge import rank_files

    if not Path(path).is_dir():
        raise InputError(f"{path}: --workers/--scheduler read a directory of rank traces", "pass RUN_DIR")
    with tempfile.TemporaryDirectory(prefix="advisor-ranks-") as tmp:
        res = mapreduce.analyze_ranks(rank_files(Path(path)), Path(tmp), client, default_cache_dir(), rules,
                                      options, select)
    if not res.tables:
        raise InputError(f"{path}: every rank failed: {res.failed}", "run advisor analyze on one rank file")
    doc: dict[str, Any] = {"path": path}
    if res.analysis is not None:
        doc |= res.analysis.to_dict() | {"rank_verdicts": distribution(res.analysis.verdict)}
    return doc | {"ranks": res.tables, "failed_ranks": res.failed, "_analysis": res.analysis}


def run_ranks(args: argparse.Namespace) -> int:
    """`advisor analyze PATH... --workers N`: each PATH (a directory of rank traces) mapped on Dask, reduced."""
    from advisor.cli.commands.analyze import rule_options, selection
    from advisor.cli.output import emit, input_paths

    with dask_client(args.workers, args.scheduler) as client:
        docs = [analyze_dir(p, client, not args.no_rules, rule_options(args.rule_option),
                            selection(args.select, args.ignore)) for p in args.paths]
    for d in docs:
        d.pop("_analysis")
    out = json.dumps({"runs": docs}, indent=2, default=str) + "\n" if args.format == "json" else text(docs)
    emit(out, args.output, input_paths(args))
    return 0


def text(docs: list[dict[str, Any]]) -> str:
    """The text form: per run its headline, verdict, per-rank verdicts, findings and failed ranks."""
    lines: list[str] = []
    for d in docs:
        lines.append(f"{d['path']}: {len(d['ranks'].get('rank_comm', []))} ranks matched across collectives")
        if "verdict" in d:
            v = d["verdict"]
            lines += [f"  verdict: {v['class']}: {v['cause']}", f"  {d['headline']}"]
            if d.get("headline_note"):
                lines.append(f"  {d['headline_note']}")
            per = ", ".join(f"{len(r)} {c}" for c, r in sorted(d["rank_verdicts"].items(), key=lambda kv: -len(kv[1])))
            lines.append(f"  per-rank verdicts: {per}")
            lines += [f"  {f['code']} {f['est_gain_ns'] / 1e6:.3f} ms  {f['message']}" for f in d["findings"]]
        for name, err in d["failed_ranks"].items():
            lines.append(f"  failed rank {name}: {err}")
    return "\n".join(lines) + "\n"


def diff_ranks(args: argparse.Namespace) -> int:
    """`advisor diff BASE NEW --workers N`: both sides analyzed on Dask, findings matched by fingerprint."""
    from advisor.cli.output import emit, input_paths
    from advisor.diff.rulefacts import match_findings

    with dask_client(args.workers, args.scheduler) as client:
        base, new = (analyze_dir(p, client, True, None, None) for p in (args.base, args.new))
    a, b = base.pop("_analysis"), new.pop("_analysis")
    doc = {
        "base": args.base, "new": args.new,
        "verdict_class": {"base": base["verdict"]["class"], "new": new["verdict"]["class"]},
        "headline": {"base": base["headline"], "new": new["headline"]},
        "findings": match_findings(a.report.findings, b.report.findings).to_dict(),
        "rank_verdicts": {"base": base["rank_verdicts"], "new": new["rank_verdicts"]},
        "failed_ranks": {"base": base["failed_ranks"], "new": new["failed_ranks"]},
    }
    emit(json.dumps(doc, indent=2, default=str) + "\n", args.output, input_paths(args))
    return 0
