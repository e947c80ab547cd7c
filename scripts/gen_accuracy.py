"""Generate docs/accuracy.md: the advisor on every reference-workload pair against its ground truth.

Run `python scripts/gen_accuracy.py` after changing a rule, a metric or a fixture; `--check` exits 1
when docs/accuracy.md differs (tests/golden/test_reference_pairs.py checks the same).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from advisor.ingest import open_run  # noqa: E402
from advisor.model.store import Run  # noqa: E402
from tests.golden import goldkit  # noqa: E402

DOC = ROOT / "docs" / "accuracy.md"


def build() -> str:
    """The document, evaluating every pair (runs cached in .pytest_cache/d/advisor-golden)."""
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 if docs/accuracy.md is stale")
    args = ap.parse_args(argv)
    text = build()
    if args.check:
        if not DOC.is_file() or DOC.read_text() != text:
            print("stale: docs/accuracy.md (run python scripts/gen_accuracy.py)", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
