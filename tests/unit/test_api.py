"""advisor.api for notebook users: the typed analysis, its JSON, tables as Arrow/pandas/polars, diff, HTML view."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

import advisor
from advisor.cli.main import main
from tests.conftest import ROOT

PAIR = ROOT / "fixtures" / "kineto"
BASE = PAIR / "IO001_pageable_memcpy_torch_baseline" / "IO001_pageable_memcpy_torch_baseline.json.gz"
NEW = PAIR / "IO001_pageable_memcpy_torch_optimized" / "IO001_pageable_memcpy_torch_optimized.json.gz"


def _no_timings(text: str) -> str:
    """Rule timings (`elapsed_s`) differ between two runs of the same analysis; nothing else may."""
    return re.sub(r'"elapsed_s": [0-9.e-]+', '"elapsed_s": 0', text)


@pytest.fixture(scope="module")
def base() -> advisor.Analysis:
    return advisor.analyze(BASE)


def test_to_json_is_the_cli_json(base: advisor.Analysis, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(BASE), "--format", "json"]) == 0
    assert _no_timings(base.to_json()) == _no_timings(capsys.readouterr().out)


def test_typed_fields_match_the_document(base: advisor.Analysis) -> None:
    doc = json.loads(base.to_json())
    assert base.headline == doc["headline"] and base.verdict is not None
    assert base.verdict.run.class_ == doc["verdict"]["class"]
    assert [f.fingerprint for f in base.findings] == [f["fingerprint"] for f in doc["findings"]]
    assert [r.code for r in base.rules] == [r["code"] for r in doc["rules"]]
    assert base.summary.capture.span_ns == doc["capture"]["span_ns"]
    assert "IO001" in {f.code for f in base.findings}  # the pair's pageable-memcpy baseline


def _gpu_events(path: Path) -> dict[str, int]:
    """Kernels and memcpys counted straight from the trace JSON (no advisor code)."""
    with gzip.open(path) as f:
        events = json.loads(f.read())["traceEvents"]
    return {"kernels": sum(e.get("cat") == "kernel" for e in events),
            "memcpy": sum(e.get("cat") == "gpu_memcpy" for e in events)}


@pytest.mark.parametrize("name", ["kernels", "memops", "cpu_ops", "ranges", "api_calls"])
def test_table_rows_equal_the_json_counts(base: advisor.Analysis, name: str) -> None:
    counts = base.summary.counts
    t = base.table(name)
    assert t.to_arrow().num_rows == counts[name] == len(t)
    assert len(t.to_pandas()) == counts[name]
    assert t.to_polars().height == counts[name]


def test_counts_agree_with_an_independent_read(base: advisor.Analysis) -> None:
    raw = _gpu_events(BASE)
    assert base.table("kernels").to_arrow().num_rows == raw["kernels"] == 24
    assert base.summary.counts["memcpy"] == raw["memcpy"] == 12


def test_named_metric_as_a_table(base: advisor.Analysis) -> None:
    spans = base.table("device_spans").to_pandas()
    assert list(spans["span_ns"]) == [t.span_ns for t in base.summary.time]


def test_unknown_table_names_the_choices(base: advisor.Analysis) -> None:
    with pytest.raises(advisor.InputError, match="no table or metric named 'kernel'") as e:
        base.table("kernel")
    assert "kernels" in str(e.value.hint) and "device_spans" in str(e.value.hint)


def test_missing_pandas_says_what_to_install(base: advisor.Analysis, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    real = importlib.import_module

    def no_pandas(name: str, *args: Any) -> Any:
        if name == "pandas":
            raise ImportError("No module named 'pandas'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_pandas)
    with pytest.raises(advisor.InputError, match="pandas is not installed") as e:
        base.table("kernels").to_pandas()
    assert "pip install pandas" in str(e.value.hint)


def test_diff_matches_findings_by_fingerprint(base: advisor.Analysis) -> None:
    import advisor.diff  # the package of the same name, imported: `advisor.diff(a, b)` still compares analyses

    new = advisor.analyze(NEW)
    d = advisor.diff(base, new)
    fb, fn = {f.fingerprint for f in base.findings}, {f.fingerprint for f in new.findings}
    assert {f.fingerprint for f in d.resolved} == fb - fn
    assert {f.fingerprint for f in d.new} == fn - fb
    assert d.findings.unchanged + len(d.changed) == len(fb & fn)
    assert "IO001" in {f.code for f in d.resolved}  # pinned memory removed the pageable copies


def test_repr_html_shows_verdict_first_fix_and_findings(base: advisor.Analysis) -> None:
    page = base._repr_html_()
    assert base.verdict is not None and f"verdict: {base.verdict.run.class_}" in page
    assert base.headline is not None and base.headline.split(" (")[0] in page
    assert page.count("<tr>") == 1 + len(base.findings)
