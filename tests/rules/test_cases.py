"""One parametrized test runs every rule case in tests/rules/cases/*.yaml (ids: <CODE>-<case>)."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.engine.findings import RuleReport, run_rules
from advisor.ingest import open_run
from advisor.model.store import Run
from advisor.rules.base import Clean, Evidence, Fired, NotApplicable
from tests.rules.casekit import Case, build_run, close, fixture_path, load_cases

CASES = load_cases()
_REAL_RUNS: dict[str, Run] = {}


def _run_for(case: Case, tmp_cache: Any) -> Run:
    if case.fixture:
        path = fixture_path(case.fixture)
        if case.fixture not in _REAL_RUNS:
            _REAL_RUNS[case.fixture] = open_run(path, cache_dir=tmp_cache)
        return _REAL_RUNS[case.fixture]
    return build_run(case.spec.get("tables", {}), case.spec.get("captured"))


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory.mktemp("rule-case-cache")


def _evidence(report: RuleReport, code: str, index: int) -> tuple[dict[str, Any], Any]:
    outcome = report.result(code).outcome
    if isinstance(outcome, Fired):
        f = outcome.findings[index]
        return {e.name: e.value for e in f.evidence}, f
    if isinstance(outcome, Clean):
        return {e.name: e.value for e in outcome.evidence}, None
    return {}, None


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rule}-{c.id}" for c in CASES])
def test_rule_case(case: Case, shared_cache: Any) -> None:
    run = _run_for(case, shared_cache)
    report = run_rules(run, options={case.rule: case.spec.get("options", {})}, select={case.rule}, strict=True)
    result = report.result(case.rule)
    assert result.kind == case.spec["expect"], result.line()
    if case.spec["expect"] == "not_applicable":
        assert isinstance(result.outcome, NotApplicable)
        if "reason" in case.spec:
            assert case.spec["reason"] in result.outcome.reason
        return
    index = int(case.spec.get("finding_index", 0))
    ev, finding = _evidence(report, case.rule, index)
    for name, expected in case.spec.get("evidence", {}).items():
        assert name in ev, f"evidence {name} missing; have {sorted(ev)}"
        assert close(ev[name], expected), f"{name}: {ev[name]} != {expected}"
    for name in case.spec.get("no_evidence", []):
        assert name not in ev, f"evidence {name} present: {ev[name]}"
    if "first_fix" in case.spec:
        assert finding is not None and finding.fixes[0].title == case.spec["first_fix"]
    if "findings" in case.spec:
        assert len(result.findings) == case.spec["findings"]
    if "est_gain_ns" in case.spec:
        assert finding is not None and close(finding.est_gain_ns, case.spec["est_gain_ns"])
    if "window" in case.spec:
        assert finding is not None
        for k, v in case.spec["window"].items():
            assert getattr(finding.window, k) == v
    _check_denominators([e for f in result.findings for e in f.evidence])


def _check_denominators(evidence: list[Evidence]) -> None:
    for e in evidence:
        if e.unit == "%":
            assert e.of, f"{e.name} is a percentage without a denominator"
