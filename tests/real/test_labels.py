"""The advisor against the expert labels of the shared real traces (../shared/fixtures/real/LABELS.md).

Per label: the class (where the expert's confidence is high or medium), that the top of the output is
not a known false fix, and the exact facts the label lists (definitions in tests/real/labelkit.py).
The diagnosis is being improved toward the goal (36 of the 40 scored labels get the expert's class),
so today's misses are listed, with the reason, in tests/real/label_misses.toml, and the test holds
them to exactly that list: an unlisted miss fails, and so does a listed miss that starts to hit.
docs/accuracy.md shows the table (`python scripts/gen_accuracy.py` regenerates it).
"""

from __future__ import annotations

from functools import cache

import pytest

from tests.conftest import real_path
from tests.real import labelkit
from tests.real.labelkit import CHECKS, Label, LabelResult
from tests.realkit import analyze

pytestmark = pytest.mark.real

LABELS = labelkit.labels()
BY_PATH = {lab.path: lab for lab in LABELS}
CASES = [(lab.path, c) for lab in LABELS for c in CHECKS
         if (c != "class" or lab.class_checked) and (c != "facts" or lab.facts)]
ACCURACY = labelkit.HERE.parents[1] / "docs" / "accuracy.md"


@cache
def judged(path: str) -> LabelResult:
    """One label judged on the process-wide analysis of its trace (tests/realkit.py)."""
    label = BY_PATH[path]
    return labelkit.evaluate(label, analyze(real_path(label.path)))


def test_labels_match_labels_md() -> None:
    """labels.toml follows LABELS.md: same paths, expected class word and confidence, in the sections
    and in the summary table."""
    text = real_path("LABELS.md").read_text()
    sections, table = labelkit.md_sections(text), labelkit.md_summary(text)
    ours = {lab.path: (lab.expected, lab.confidence) for lab in LABELS}
    assert len(ours) == len(LABELS) == 46, "one [[label]] per LABELS.md section, no duplicates"
    for name, found in (("sections", sections), ("summary table", table)):
        assert set(found) == set(ours), f"{name} only: {set(found) - set(ours)}; toml only: {set(ours) - set(found)}"
    for path, want in ours.items():
        assert sections[path] == want, f"{path}: LABELS.md section says {sections[path]}, labels.toml {want}"
        assert table[path] == want, f"{path}: LABELS.md summary table says {table[path]}, labels.toml {want}"


def test_labels_are_well_formed() -> None:
    for lab in LABELS:
        assert lab.expected in labelkit.CLASSES, lab.path
        assert lab.confidence in ("high", "medium", "low"), lab.path
        assert (lab.expected == "mixed") == bool(lab.classes), f"{lab.path}: classes go with mixed only"
        for acc in lab.acceptable:
            assert acc.class_ in labelkit.CLASSES, lab.path
        for token in (*lab.false_fixes, *lab.first_fix):
            labelkit.matches(token, {"code": ""})  # raises on a malformed token
        assert len({f.name for f in lab.facts}) == len(lab.facts), f"{lab.path}: fact names must be unique"
    assert sum(lab.scored for lab in LABELS) == 40, "the issue's denominator: high/medium labels with a class"


def test_misses_name_real_labels() -> None:
    for path, miss in labelkit.misses().items():
        assert path in BY_PATH, f"label_misses.toml names {path}, which has no label"
        assert miss.get("reason"), f"known miss {path} needs a reason"
        assert set(miss.get("checks", [])) <= set(CHECKS), f"{path}: checks must be among {CHECKS}"
        names = {f.name for f in BY_PATH[path].facts}
        assert set(miss.get("facts", [])) <= names, f"{path}: facts names must be the label's"
        assert bool(miss.get("facts")) == ("facts" in miss.get("checks", [])), f"{path}: list the missed facts"


def _detail(res: LabelResult, lab: Label) -> str:
    facts = "; ".join(f.line() for f in res.facts if not f.ok)
    return (f"{lab.path}: expected {lab.expected_text} ({lab.confidence}), advisor {res.observed}, top {res.top}"
            f"{'; ' + res.fix_problem if res.fix_problem else ''}{'; facts: ' + facts if facts else ''}")


@pytest.mark.parametrize(("path", "check"), CASES, ids=[f"{p}-{c}" for p, c in CASES])
def test_label(path: str, check: str) -> None:
    lab, res = BY_PATH[path], judged(path)
    miss = labelkit.misses().get(path, {})
    known = check in miss.get("checks", [])
    detail = _detail(res, lab)
    if check == "facts":
        want = sorted(miss.get("facts", []))
        assert sorted(res.failed_facts()) == want, f"facts missed {res.failed_facts()}, listed {want}. {detail}"
    elif known:
        assert not res.hits()[check], f"{check} now hits: remove it from tests/real/label_misses.toml. {detail}"
    else:
        assert res.hits()[check], f"{check} missed. {detail}"


def test_accuracy_section_is_fresh() -> None:
    """The 'Real-world traces' section of docs/accuracy.md is what the labels and today's advisor give."""
    want = labelkit.render([judged(lab.path) for lab in LABELS], labelkit.misses())
    have = ACCURACY.read_text() if ACCURACY.is_file() else ""
    assert labelkit.SECTION in have, "docs/accuracy.md has no real-trace section: run `python scripts/gen_accuracy.py`"
    section = have[have.index(labelkit.SECTION):]
    assert section == want, "docs/accuracy.md is stale: run `python scripts/gen_accuracy.py --only real`"


def test_false_fix_tokens_on_a_real_finding() -> None:
    """The token grammar on the MI250 toy step's top finding: ID001, whose largest idle cause is the one-time
    first launch (6.54 ms of 8.91 ms, 'startup', not priced), so it no longer claims the label's false
    '~94% from launch-overhead removal' (ID001:launch>50) but the per-op host time after it."""
    a = analyze(real_path("hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
    top = labelkit.top_finding(a)
    assert top is not None and top["code"] == "ID001"
    assert labelkit.matches("ID001", top) and labelkit.matches("ID001:startup", top)
    assert not labelkit.matches("ID001:launch", top) and not labelkit.matches("ID001:unknown", top)
    assert not labelkit.matches("LA001", top) and not labelkit.matches("ID001:launch>50", top)
    gain = float(top["gain_pct"])
    assert gain < 50
    assert labelkit.matches(f"ID001:startup>{gain - 1}", top) and not labelkit.matches(f"ID001:startup>{gain}", top)
    with pytest.raises(ValueError):
        labelkit.matches("launch overhead", top)


def test_resolve_paths_on_a_real_document() -> None:
    """The fact paths on the 8-rank directory: selection by field, by substring, all elements, and sums."""
    doc = analyze(real_path("param/dlrm_8rank")).doc
    assert [t["rank"] for t in labelkit.resolve(doc, "time[*]")] == list(range(8))
    assert labelkit.resolve(doc, "time[rank=7].span_ns") == [10_967_000]
    nccl = labelkit.resolve(doc, "top_kernels.items[name~ncclKernel].count")
    assert sorted(nccl) == [24, 40]  # 3 AllReduce + 5 SendRecv on each of 8 ranks
    fact = labelkit.Fact("x", ("time[*].compute_kernels",), unit="ms", agg="max")
    assert labelkit.fact_value(fact, doc) == max(t["compute_kernels"]["ns"] for t in doc["time"]) / 1e6
