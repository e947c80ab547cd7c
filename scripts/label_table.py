"""Print, per expert label of the shared real traces, what the advisor says and whether it agrees.

One line per label: path, expected class (confidence), the advisor's class/confidence, the top finding,
and class / fix / facts marks (`hit`, `MISS`; a miss listed in tests/real/label_misses.toml shows as
`miss*`; `-` where the class is not scored), then the totals the goal is measured in. The judgement is
tests/real/labelkit.py, the same code tests/real/test_labels.py and docs/accuracy.md use.

    python scripts/label_table.py            # all 46 labels
    python scripts/label_table.py dlrm hta/   # labels whose path contains any of these words
    python scripts/label_table.py --why       # also print why each miss misses

Analyses are cached (ADVISOR_CACHE_DIR, else .pytest_cache/d/advisor-real): a cold run takes about half a
minute of CPU, a warm one a few seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.real import labelkit  # noqa: E402
from tests.real.labelkit import LabelResult  # noqa: E402
from tests.realkit import analyze  # noqa: E402


def mark(res: LabelResult, check: str, listed: list[str]) -> str:
    if check == "class" and not res.label.class_checked:
        return "-"
    if res.hits()[check]:
        return "hit"
    return "miss*" if check in listed else "MISS"


def line(res: LabelResult, listed: list[str]) -> str:
    lab = res.label
    facts = f"{sum(f.ok for f in res.facts)}/{len(res.facts)}"
    return (f"{lab.path[:58]:58} {lab.expected_text[:24]:24} {lab.confidence[:3]:3}  {res.observed[:22]:22} "
            f"{res.top[:20]:20} {mark(res, 'class', listed):5} {mark(res, 'fix', listed):5} {facts}")


def why(res: LabelResult) -> list[str]:
    out = [f"    fix: {res.fix_problem}"] if res.fix_problem else []
    return out + [f"    fact: {f.line()}" for f in res.facts if not f.ok]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("words", nargs="*", help="only labels whose path contains one of these")
    ap.add_argument("--why", action="store_true", help="print the reason of each miss")
    args = ap.parse_args(argv)
    if not os.environ.get("ADVISOR_CACHE_DIR"):
        cache = ROOT / ".pytest_cache" / "d" / "advisor-real"
        cache.mkdir(parents=True, exist_ok=True)
        os.environ["ADVISOR_CACHE_DIR"] = str(cache)
    misses = labelkit.misses()
    chosen = [lab for lab in labelkit.labels() if not args.words or any(w in lab.path for w in args.words)]
    print(f"{'label':58} {'expected':24} {'cnf':3}  {'advisor':22} {'top finding':20} class fix   facts")
    results = []
    for lab in chosen:
        res = labelkit.evaluate(lab, analyze(labelkit.input_path(lab)))
        results.append(res)
        print(line(res, misses.get(lab.path, {}).get("checks", [])), flush=True)
        if args.why and not all(res.hits().values()):
            print("\n".join(why(res)))
    print()
    print("\n".join(labelkit.summary_lines(results)))
    new = [r.label.path for r in results
           if any(not h and (c != "class" or r.label.class_checked) and c not in misses.get(r.label.path, {}).get(
               "checks", []) for c, h in r.hits().items())]
    fixed = [f"{r.label.path} ({c})" for r in results for c in misses.get(r.label.path, {}).get("checks", [])
             if r.hits()[c]]
    if new:
        print(f"- NEW misses (not in tests/real/label_misses.toml): {', '.join(new)}")
    if fixed:
        print(f"- now hitting, remove from tests/real/label_misses.toml: {', '.join(fixed)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
