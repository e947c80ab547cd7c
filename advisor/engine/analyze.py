"""`analyze`: open each input, summarize it, run the rules, and assemble the versioned document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from advisor import __version__
from advisor.engine.summary import JSON_SCHEMA_VERSION, summarize
from advisor.ingest import open_run
from advisor.model.store import Run
from advisor.parsers.base import ParseOptions


def analyze_run(run: Run, top: int = 10) -> dict[str, Any]:
    """Summary of one run plus its findings and verdict."""
    doc = summarize(run, top=top)
    doc["findings"] = []
    doc["verdict"] = None
    return doc


def analyze_paths(paths: Sequence[str], options: ParseOptions | None = None, top: int = 10) -> dict[str, Any]:
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
        for key in ("devices", "counts", "capture", "time", "top_kernels", "ranges", "findings", "verdict"):
            doc[key] = runs[0][key]
    return doc
