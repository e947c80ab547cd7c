"""docs/reliability.md is the output of `python scripts/mutate_corpus.py run --budget long` for today's corpus."""

from __future__ import annotations

import re
from collections import Counter

from tests.conftest import ROOT
from tests.reliability.conftest import corpus

RERUN = "rerun `python scripts/mutate_corpus.py run --budget long` to regenerate docs/reliability.md"


def _generated() -> str:
    """The part the corpus script writes (the hand-written sections after it have tables of their own)."""
    return (ROOT / "docs" / "reliability.md").read_text().split("\n## Promises under hostile use")[0]


def test_reliability_doc_matches_the_corpus() -> None:
    text = _generated()
    rows = dict(re.findall(r"^\| ([a-z-]+) \| (\d+) \|", text, re.MULTILINE))
    expected = Counter(c.category for c in corpus.cases("long"))
    assert {k: int(v) for k, v in rows.items()} == dict(expected), f"stale: {RERUN}"
    assert "Budget `long`" in text, RERUN


def test_reliability_doc_reports_no_failures() -> None:
    text = _generated()
    total = re.search(r"^\| \*\*all\*\* \| \*\*(\d+)\*\* \| \*\*(\d+)\*\* \| \*\*(\d+)\*\* \| \*\*(\d+)\*\* \|", text,
                      re.MULTILINE)
    assert total, RERUN
    tried, ingested, clean, failures = map(int, total.groups())
    assert tried == ingested + clean + failures
    assert failures == 0, "the long corpus run found failures: see the Failures section of docs/reliability.md"


def test_regenerating_keeps_the_promises_section() -> None:
    """The hand-written promises (one row per hostile-use case) survive `mutate_corpus.py run`."""
    doc = ROOT / "docs" / "reliability.md"
    kept = corpus.hand_written(doc)
    assert kept.startswith("\n" + corpus.KEPT_FROM), "docs/reliability.md lost its '## Promises under hostile use'"
    regenerated = corpus.render_doc([], "long", "forked from a warm parent") + kept
    assert regenerated.count(corpus.KEPT_FROM) == 1
    assert "<!-- relout rows" in regenerated and "<!-- relcache rows" in regenerated
    assert regenerated.endswith(doc.read_text().split(corpus.KEPT_FROM, 1)[1])
