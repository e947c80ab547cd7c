"""`analyze`: open each input, summarize it, run the rules, and assemble the versioned document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor import __version__
from advisor.engine.findings import classify, run_rules
from advisor.engine.summary import JSON_SCHEMA_VERSION, summarize
from advisor.ingest import open_run
from advisor.model.store import Run
from advisor.parsers.base import ParseOptions


def analyze_run(
    run: Run,
    top: int = 10,
    rules: bool = True,
    rule_options: Mapping[str, Mapping[str, Any]] | None = None,
    select: set[str] | None = None,
    ncu: Run | None = None,
) -> dict[str, Any]:
    """Summary of one run plus its verdict, "do this first" headline, ranked findings and rule outcomes.

    ncu: an Nsight Compute run of the same program (analyze --ncu): joined to the timeline `run`,
    it feeds the ncu rules (gains weighted by the matched kernels' timeline time) and the verdict.
    """
    doc = summarize(run, top=top)
    joined = None
    if ncu is not None:
        from advisor.engine.ncu import join_section, join_timeline

        joined = join_timeline(ncu, run)
        doc["ncu"] = join_section(ncu, joined)
    if not rules:
        doc.update(findings=[], verdict=None, headline=None, rules=[])
        return doc
    report = run_rules(run, rule_options, select, ncu=ncu, joined=joined)
    verdict = classify(run, ncu=joined).to_dict()
    doc["verdict"] = dict(verdict["run"], devices=verdict.get("devices", []), ranges=verdict.get("ranges", []))
    rd = report.to_dict()
    doc["headline"] = rd["headline"]
    doc["findings"] = rd["findings"]
    doc["rules"] = rd["rules"]
    return doc


def analyze_paths(paths: Sequence[str], options: ParseOptions | None = None, top: int = 10) -> dict[str, Any]:
    """Library entry point: the analyze document for several inputs."""
    runs = []
    for p in paths:
        run = open_run(p, options)
        try:
            runs.append(analyze_run(run, top=top))
        finally:
            run.close()
    return document(runs)


def document(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON contract (docs/json-output.md). With one input, its run's fields are also top-level."""
    doc: dict[str, Any] = {
        "schema_version": JSON_SCHEMA_VERSION,
        "advisor_version": __version__,
        "inputs": [r["input"] for r in runs],
        "runs": runs,
    }
    if len(runs) == 1:
        for key in ("devices", "counts", "capture", "time", "top_kernels", "ranges", "headline", "findings",
                    "verdict", "rules"):
            doc[key] = runs[0][key]
    return doc
