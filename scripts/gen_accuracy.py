"""Generate docs/accuracy.md: the advisor on every reference-workload pair against its ground truth, then
on the shared real traces against their expert labels (section "Real-world traces (expert labels)").

Run `python scripts/gen_accuracy.py` after changing a rule, a metric or a fixture; `--only pairs` or
`--only real` rebuilds one part and keeps the other as it is in the file. `--check` exits 1 when
docs/accuracy.md differs (tests/golden/test_reference_pairs.py and tests/real/test_labels.py check the
same, each its own part). Parsed runs are cached in .pytest_cache/d/ (advisor-golden, advisor-real)
unless ADVISOR_CACHE_DIR names a cache for the real traces.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docgen import emit  # noqa: E402

from advisor.ingest import open_run  # noqa: E402
from advisor.model.store import Run  # noqa: E402
from tests.golden import goldkit  # noqa: E402
from tests.real import labelkit  # noqa: E402
from tests.realkit import analyze  # noqa: E402

DOC = ROOT / "docs" / "accuracy.md"


def build_pairs() -> str:
    """The reference-pair part, evaluating every pair (runs cached in .pytest_cache/d/advisor-golden)."""
    cache = ROOT / ".pytest_cache" / "d" / "advisor-golden"
    cache.mkdir(parents=True, exist_ok=True)
    results = []
    runs: list[Run] = []

    def opener(path: Path) -> Run:
        runs.append(open_run(path, cache_dir=cache))
        return runs[-1]

    with tempfile.TemporaryDirectory() as scratch:
        for pair in goldkit.discover():
            results.append(goldkit.evaluate(pair, opener, Path(scratch)))
            for r in runs:
                r.close()
            runs.clear()
    return goldkit.render(results, goldkit.known_misses())


def real_cache() -> None:
    """Analyses of the real traces use ADVISOR_CACHE_DIR when set, else .pytest_cache/d/advisor-real."""
    if not os.environ.get("ADVISOR_CACHE_DIR"):
        cache = ROOT / ".pytest_cache" / "d" / "advisor-real"
        cache.mkdir(parents=True, exist_ok=True)
        os.environ["ADVISOR_CACHE_DIR"] = str(cache)


def judge_labels() -> list[labelkit.LabelResult]:
    """Every label judged on `advisor analyze --format json` of its trace (the code tests/real uses)."""
    real_cache()
    return [labelkit.evaluate(lab, analyze(labelkit.input_path(lab))) for lab in labelkit.labels()]


def build_real() -> str:
    """The real-trace section (starts with labelkit.SECTION)."""
    return labelkit.render(judge_labels(), labelkit.misses())


def split(text: str) -> tuple[str, str]:
    """docs/accuracy.md as (reference-pair part, real-trace section)."""
    head, sep, tail = text.partition(labelkit.SECTION)
    return (head[:-1], sep + tail) if sep else (text, "")


def build(only: str | None = None) -> str:
    """The document; with `only`, the other part is kept from the current file."""
    old_pairs, old_real = split(DOC.read_text() if DOC.is_file() else "")
    pairs = old_pairs if only == "real" else build_pairs()
    real = old_real if only == "pairs" else build_real()
    return pairs + "\n" + real


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 if docs/accuracy.md is stale")
    ap.add_argument("--only", choices=("pairs", "real"), help="rebuild one part, keep the other from the file")
    args = ap.parse_args(argv)
    text = build(args.only)
    return emit(DOC, text, args.check, "python scripts/gen_accuracy.py")


if __name__ == "__main__":
    raise SystemExit(main())
