"""Golden tests: the advisor against the reference workloads' ground truth (fixtures/*/PROVENANCE.json).

Per pair: the baseline's verdict class and top finding, the fix's rule absent (or much smaller) on
the optimized run, and the predicted vs measured gain recorded in docs/accuracy.md (definitions in
tests/golden/goldkit.py). Misses the rules cannot fix yet are listed, with the reason, in
tests/golden/known_misses.toml; the test holds them to exactly that list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.ingest import open_run
from advisor.model.store import Run
from tests import savings
from tests.conftest import IN_CI, session_cache
from tests.golden import goldkit
from tests.golden.goldkit import CHECKS, PairResult

REAL_SECTION = "## Real-world traces (expert labels)"  # tests/real/labelkit.SECTION

PAIRS = goldkit.discover()
ACCURACY = goldkit.ROOT / "docs" / "accuracy.md"


@pytest.fixture(scope="session")
def results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PairResult]:
    """Every pair evaluated once per session; parsed runs are kept in pytest's cache folder
    (.pytest_cache/d/advisor-golden, keyed by content hash + schema version) across sessions, or, under CI (a
    clean clone: nothing to reuse) or with the cache plugin off, in the session's cache, where the other tests
    reading the same captures find them parsed."""
    store = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    cache = session_cache(tmp_path_factory) if IN_CI or store is None else Path(store.mkdir("advisor-golden"))
    scratch = tmp_path_factory.mktemp("golden-inputs")
    runs: list[Run] = []

    def opener(path: Path) -> Run:
        runs.append(open_run(path, cache_dir=cache))
        return runs[-1]

    out: dict[str, PairResult] = {}
    for pair in PAIRS:
        out[pair.workload] = goldkit.evaluate(pair, opener, scratch)
        for r in runs:
            r.close()
        runs.clear()
    return out


def test_pairs_discovered() -> None:
    assert len(PAIRS) >= 20, [p.workload for p in PAIRS]


def test_known_misses_name_real_pairs() -> None:
    names = {p.workload for p in PAIRS}
    for name, miss in goldkit.known_misses().items():
        assert name in names, f"known_misses.toml names {name}, which has no captured pair"
        assert miss.get("reason"), f"known miss {name} needs a reason"
        assert set(miss.get("checks", [])) <= set(CHECKS), f"{name}: checks must be among {CHECKS}"


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("workload", [p.workload for p in PAIRS])
def test_pair(workload: str, check: str, results: dict[str, PairResult]) -> None:
    res = results[workload]
    known = check in goldkit.known_misses().get(workload, {}).get("checks", [])
    exp = res.pair.prov["expected"]
    detail = (
        f"{workload}: expected class {exp['class']}, top {res.pair.rule}; baseline verdict {res.baseline_class}, "
        f"findings {[(n, round(g, 3)) for n, g in res.baseline_findings[:4]]}; optimized "
        f"{[(n, round(g, 3)) for n, g in res.optimized_findings[:4]]} (ms per iteration)"
    )
    if known:
        assert not res.hits[check], f"{check} now hits: remove it from tests/golden/known_misses.toml. {detail}"
    else:
        assert res.hits[check], f"{check} missed. {detail}"


@pytest.mark.parametrize("workload", [p.workload for p in PAIRS])
def test_savings_within_denominators(workload: str, results: dict[str, PairResult]) -> None:
    """No finding on the pair's captures claims more than its denominator (tests/savings.py); known
    violations are listed, exactly, in tests/savings_known.toml."""
    known = savings.known()
    for capture, found in results[workload].savings.items():
        listed = known.get(capture, [])
        assert found == listed, f"{capture}: savings beyond their denominator {found}; listed {listed}"


def test_savings_known_name_captures() -> None:
    ids = {goldkit.capture_id(p, v) for p in PAIRS for v in (p.baseline, p.optimized)}
    for name in savings.known():
        if name.startswith("fixtures/"):
            assert name in ids, f"tests/savings_known.toml names {name}, which is not a captured pair variant"


def test_accuracy_doc_is_fresh(results: dict[str, PairResult]) -> None:
    want = goldkit.render([results[p.workload] for p in PAIRS], goldkit.known_misses())
    have = ACCURACY.read_text() if ACCURACY.is_file() else ""
    # the reference-pair part, up to the real-trace section (tests/real/test_labels.py checks that one)
    have = have.partition("\n" + REAL_SECTION)[0]
    assert have == want, "docs/accuracy.md is stale: run `python scripts/gen_accuracy.py`"
