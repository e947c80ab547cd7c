"""The rule engine and the rule unit's contract: metadata, docs, applicability, ranking,
fingerprints, denominators, options, the verdict."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from advisor import metrics
from advisor.engine.findings import explain, list_rules, run_rules
from advisor.errors import InputError
from advisor.rules.base import HEADINGS, Evidence, NotApplicable
from advisor.rules.catalog import sections
from advisor.rules.classify import classify
from advisor.rules.registry import all_rules
from tests.rules.casekit import build_run

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "rules" / "cases"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_unit_contract(rule: type) -> None:
    """File name, folder, docstring headings, options documented, YAML cases present."""
    module_file = Path(sys.modules[rule.__module__].__file__ or "")
    assert module_file.name == f"{rule.code}_{rule.name.replace('-', '_')}.py"
    assert module_file.parent.name == rule.category
    assert re.fullmatch(r"[A-Z]{2}\d{3}", rule.code)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    assert rule.chapter and all(1 <= c <= 20 for c in rule.chapter)
    body = sections(rule)
    assert list(body) == list(HEADINGS), f"{rule.code} headings {list(body)}"
    assert all(body[h].strip() for h in HEADINGS)
    for name, opt in rule.options.items():
        assert f"`{name}`" in body["Options"], f"{rule.code} Options section does not mention {name}"
        assert opt.help
    case_file = CASES / f"{rule.code}.yaml"
    assert case_file.is_file(), f"missing {case_file}"
    kinds = {c["expect"] for c in yaml.safe_load(case_file.read_text())["cases"]}
    assert {"fired", "clean"} <= kinds


def test_docs_are_fresh() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_rule_docs.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, f"docs/rules is stale: run `python scripts/gen_rule_docs.py`\n{proc.stderr}"


def test_every_metric_file_names_itself() -> None:
    for name in metrics.names():
        m = metrics.get(name)
        assert m.name == name and m.doc
        for dep in m.uses:  # built before the metric runs: a table or view of its own
            assert metrics.get(dep).materialize, f"{name} uses {dep}, not materialized"
        assert "m_windows" not in m.sql, f"{name}: window sets are clipped by advisor.metrics.clip, not in SQL"


def test_list_and_explain() -> None:
    infos = list_rules()
    assert [i.code for i in infos] == sorted(i.code for i in infos)
    text = explain("io001")
    assert text.startswith("# IO001 pageable-memcpy") and "## How to fix" in text
    with pytest.raises(InputError):
        explain("XX999")
    json.dumps([i.to_dict() for i in infos])


def _sync_run(shift: int = 0):  # type: ignore[no-untyped-def]
    k = [
        {
            "device_id": 0,
            "pid": 1,
            "start_ns": shift + i * 150_000,
            "end_ns": shift + i * 150_000 + 100_000,
            "name": "relax",
        }
        for i in range(12)
    ]
    a = [
        {
            "pid": 1,
            "tid": 1,
            "start_ns": shift + i * 150_000 + 10_000,
            "end_ns": shift + i * 150_000 + 110_000,
            "api": "cuda_runtime",
            "name": "cudaDeviceSynchronize",
        }
        for i in range(11)
    ]
    m = [
        {
            "device_id": 0,
            "start_ns": shift,
            "end_ns": shift + 100_000,
            "op": "memcpy",
            "copy_kind": "HtoD",
            "src_kind": "pageable",
            "dst_kind": "device",
            "bytes": 1000,
        }
    ]
    return build_run({"kernels": k, "api_calls": a, "memops": m})


def test_applicability_from_requires() -> None:
    run = build_run(
        {"kernels": [{"device_id": 0, "start_ns": 0, "end_ns": 10, "name": "k"}]}, captured=["kernels", "memops"]
    )
    report = run_rules(run, select={"IO001", "LA002"}, strict=True)
    io = report.result("IO001").outcome
    assert isinstance(io, NotApplicable) and "recorded no memops" in io.reason and io.how_to_capture
    la = report.result("LA002").outcome
    assert isinstance(la, NotApplicable) and "did not record api_calls" in la.reason
    assert "capture with" in report.result("LA002").line()


def test_ranking_headline_and_denominators() -> None:
    report = run_rules(_sync_run(), options={"IO001": {"min_gain_us": 0}}, strict=True)
    gains = [f.est_gain_ns for f in report.findings]
    assert gains == sorted(gains, reverse=True) and gains
    assert report.headline().startswith("do this first:") and "% of the longest device span" in report.headline()
    doc = report.to_dict()
    json.dumps(doc)
    for f in doc["findings"]:
        assert f["gain_pct_of"] and f["gain_basis"]
        for e in f["evidence"]:
            if e["unit"] == "%":
                assert e.get("of"), f"{f['code']} {e['name']} has no denominator"
    with pytest.raises(ValueError):
        Evidence("share", 10.0, "%")


def test_fingerprints_do_not_depend_on_time() -> None:
    a = run_rules(_sync_run(0), strict=True)
    b = run_rules(_sync_run(5_000_000_000), strict=True)
    assert a.findings and [f.fingerprint for f in a.findings] == [f.fingerprint for f in b.findings]
    assert len({f.fingerprint for f in a.findings}) == len(a.findings)


def test_options_and_select_are_checked() -> None:
    run = _sync_run()
    with pytest.raises(InputError):
        run_rules(run, options={"LA002": {"nope": 1}})
    with pytest.raises(InputError):
        run_rules(run, options={"ZZ001": {}})
    with pytest.raises(InputError):
        run_rules(run, options={"LA002": {"min_calls": "many"}})
    with pytest.raises(InputError):
        run_rules(run, select={"QQ"})
    picked = run_rules(run, select={"launch"})
    assert {r.code for r in picked.results} == {r.code for r in all_rules() if r.category == "launch"}
    strict = run_rules(run, options={"LA002": {"min_calls": 100}}, select={"LA002"}, strict=True)
    assert strict.result("LA002").kind == "clean"


def test_verdict_shares_name_denominators_and_partition_the_span() -> None:
    v = classify(_sync_run())
    doc = v.to_dict()
    json.dumps(doc)
    assert doc["run"]["class"] in {"compute", "memory", "io", "launch", "communication", "mixed", "none", "latency"}
    for dv in doc["devices"]:
        shares = dv["verdict"]["shares"]
        assert all(s["of"] for s in shares)
        assert sum(s["pct"] for s in shares) == pytest.approx(100.0, abs=0.5)
    # kernels of no known family ("relax") run 68.6% of the span, the rest is idle with no host cause covering half
    # of a gap: the verdict assumes memory-bound, says so, at low confidence
    d = v.devices[0].verdict
    assert (d.class_, d.confidence) == ("memory", "low") and "assumed memory-bound" in d.cause
