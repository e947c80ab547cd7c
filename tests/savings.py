"""Property: no finding claims more time than the denominator it names (issue 18, kind 5).

A finding states its saving (`est_gain_ns`) and, in the JSON, several denominators it must fit in:
- `gain_pct` is the saving as a share of the headline's denominator (the longest device span, or the
  profiled kernel time of an Nsight Compute report): at most 100%. The headline's "expected to save X of
  Y" is findings[0] with the same denominator, so this also holds the headline to X <= Y.
- a finding whose window names a device claims at most that device's span, widened to its marked steps where
  they reach further (`time[].extent_ns`: in a directory of rank traces each rank has its own device, so this is
  "a per-rank finding claims at most that rank's time").
- a finding whose window has no device but a start and end (host-side work of one process, such as its
  DataLoader calls) claims at most that window: its fix removes time inside it, nothing else.
- every share in its evidence (`unit` "%" with an `of`) lies within 0..100% of the denominator it names.

Checked on every real trace (tests/e2e/test_fixture_walk.py, reusing its analyses) and on every reference
pair's baseline and optimized capture (tests/golden/test_reference_pairs.py, reusing its rule reports).
Known violations are data in tests/savings_known.toml, held to exactly that list like the known misses.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

KNOWN = Path(__file__).resolve().parent / "savings_known.toml"


def known() -> dict[str, list[str]]:
    """input id -> the violations listed for it (see violations())."""
    doc = tomllib.loads(KNOWN.read_text())
    return {str(k): sorted(v["violations"]) for k, v in doc.items()}


def _key(f: Mapping[str, Any], what: str) -> str:
    return f"{f['code']} {f.get('location') or '-'}: {what}"


def finding_violations(f: Mapping[str, Any], spans: Mapping[int, int]) -> list[str]:
    """What one finding (its JSON form) claims beyond a denominator it names."""
    gain = int(f["est_gain_ns"])
    out = []
    if gain < 0:
        out.append(_key(f, "negative gain"))
    if float(f.get("gain_pct") or 0) > 100.0:
        out.append(_key(f, "gain > headline denominator"))
    w = f.get("window") or {}
    dev = w.get("device_id")
    if dev is not None and dev in spans and gain > spans[dev]:
        out.append(_key(f, f"gain > device {dev} span"))
    hosted = dev is None and w.get("start_ns") is not None and w.get("end_ns") is not None
    if hosted and gain > int(w["end_ns"]) - int(w["start_ns"]):
        out.append(_key(f, "gain > its window"))
    for e in f.get("evidence", ()):
        share = e.get("unit") == "%" and e.get("of") and isinstance(e.get("value"), int | float)
        if share and not 0.0 <= float(e["value"]) <= 100.0:
            out.append(_key(f, f"{e['name']} {e['value']}% of {e['of']}"))
    return out


def violations(findings: Iterable[Mapping[str, Any]], spans: Mapping[int, int]) -> list[str]:
    """Every violation of the findings of one run, sorted; `spans`: device id -> span (ns)."""
    return sorted(v for f in findings for v in finding_violations(f, spans))


def doc_violations(doc: Mapping[str, Any]) -> list[str]:
    """Violations in an `advisor analyze --format json` document (every run of it)."""
    out = []
    for run in doc.get("runs", ()):
        spans = {int(t["device_id"]): int(t.get("extent_ns", t["span_ns"])) for t in run.get("time", ())}
        out += violations(run.get("findings") or (), spans)
    return sorted(out)
