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
                select: set[str] | None, top: int = 10) -> dict[str, Any]:
    """One directory's run: its document (the single-process path's run document, with the per-rank verdicts,
    cross-rank tables and failed ranks added), and under `_analysis` the typed analysis. Without `rules`
    (--no-rules) the facts and sections only, as the single-process path gives them."""
    from advisor.distributed import mapreduce
    from advisor.distributed.combine import distribution
    from advisor.model.entry import default_cache_dir
    from advisor.parsers.kineto.merge import rank_files

    if not Path(path).is_dir():
        raise InputError(f"{path}: --workers/--scheduler read a directory of rank traces", "pass RUN_DIR")
    with tempfile.TemporaryDirectory(prefix="advisor-ranks-") as tmp:
        res = mapreduce.analyze_ranks(rank_files(Path(path)), Path(tmp), client, default_cache_dir(), True,
                                      options, select, directory=Path(path), top=top, facts_only=not rules)
    if not res.tables:
        raise InputError(f"{path}: every rank failed: {res.failed}", "run advisor analyze on one rank file")
    if res.analysis is None:
        raise InputError(f"{path}: no rank was analyzed: {res.failed}", "run advisor analyze on one rank file")
    doc: dict[str, Any] = res.analysis.to_dict()
    if res.analysis.analysis.verdict is not None:
        doc["rank_verdicts"] = distribution(res.analysis.verdict)
    return doc | {"ranks": res.tables, "failed_ranks": res.failed, "_analysis": res.analysis}


DASK_KEYS = ("rank_verdicts", "ranks", "failed_ranks")  # what the Dask path adds to a run's document (with rules)


def run_ranks(args: argparse.Namespace) -> int:
    """`advisor analyze PATH... --workers N`: each PATH (a directory of rank traces) mapped on Dask, reduced, and
    rendered as the single-process path renders it (the same JSON contract, text and Markdown), with the
    per-rank verdicts, cross-rank tables and failed ranks added."""
    from advisor.cli.commands.analyze import rule_options, selection
    from advisor.cli.output import emit, input_paths

    with dask_client(args.workers, args.scheduler) as client:
        docs = [analyze_dir(p, client, not args.no_rules, rule_options(args.rule_option),
                            selection(args.select, args.ignore), args.top) for p in args.paths]
    analyses = [d.pop("_analysis") for d in docs]
    if args.format == "json":
        out = json.dumps(document(docs, analyses), indent=2, default=str) + "\n"
    else:
        out = rendered(docs, analyses, args)
    emit(out, args.output, input_paths(args), what=f"{args.format} analysis", styled=args.format == "text")
    return 1 if args.fail_on.failed([a.analysis for a in analyses]) else 0


def document(docs: list[dict[str, Any]], analyses: list[Any]) -> dict[str, Any]:
    """The JSON contract of the single-process path (api.document) over the runs analyzed, each run with the
    Dask additions (DASK_KEYS; top-level too, with one run, as the run's other fields are)."""
    from advisor.api import document as single

    doc = single([a.analysis for a in analyses])
    for run, d in zip(doc["runs"], docs, strict=True):
        run.update((k, d[k]) for k in DASK_KEYS if k in d)
    if len(docs) == 1:
        doc.update((k, docs[0][k]) for k in DASK_KEYS if k in docs[0])
    return doc


def rendered(docs: list[dict[str, Any]], analyses: list[Any], args: argparse.Namespace) -> str:
    """Text or Markdown: each run as the single-process renderer writes it, then its per-rank verdicts and
    failed ranks."""
    from advisor.cli.render import markdown_document, text_document

    parts = []
    for d, a in zip(docs, analyses, strict=True):
        extra = ranks_lines(d)
        if args.format == "md":
            parts.append(markdown_document([a.analysis]) + "\n## Ranks\n\n" + "".join(f"- {x}\n" for x in extra))
        else:
            parts.append(text_document([a.analysis], verbose=args.verbose, wide=args.wide) + "\nranks:\n"
                         + "".join(f"  {x}\n" for x in extra))
    return "\n".join(parts)


def ranks_lines(d: Mapping[str, Any]) -> list[str]:
    """The Dask additions in words: ranks matched across collectives, per-rank verdicts, failed ranks."""
    lines = [f"{len(d['ranks'].get('rank_comm', []))} ranks matched across collectives"]
    if "rank_verdicts" in d:
        per = sorted(d["rank_verdicts"].items(), key=lambda kv: (-len(kv[1]), kv[0]))
        lines.append("per-rank verdicts: " + "; ".join(f"{c}: {len(r)} ({', '.join(map(str, r))})" for c, r in per))
    lines += [f"failed rank {name}: {err}" for name, err in d["failed_ranks"].items()]
    return lines


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
