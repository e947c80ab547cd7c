"""The verify loop: was the saving a fixed finding predicted realised in the new run?

An agent that applied a fix asks `diff baseline optimized`; this section answers per fixed finding
(resolved, or reduced by at least the diff's `changed` bounds) with its prediction next to the
measurement. Why a group comparison: the diff measures one change (the headline metric: mean step
time, or GPU time without steps) for everything that differs, so when several findings were fixed
together the measured saving is compared with their summed prediction, and each finding says so.

Predicted: the base finding's est_gain_ns as a share of the base run's longest device span (the
`gain_pct` of `advisor analyze`); for a reduced finding, the part of its gain that went away.
Measured: minus the metric's delta as a share of its base (with the 95% interval when there is one).
"""

from __future__ import annotations

from typing import Any

from advisor.vocab import pct

REALISED_RATIO = 0.8  # measured >= 80% of predicted: realised
# below it but an improvement beyond the threshold: partly realised; no improvement: not realised


def verify(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The `verify` section of a diff document; None when the findings were not compared (--no-rules)."""
    f = doc.get("findings")
    if f is None:
        return None
    span = max((int(d["base"]["span_ns"]) for d in doc["devices"] if d.get("base")), default=0)
    fixed = [_fixed(c, "resolved", int(c["est_gain_ns"]), span) for c in f["resolved"]]
    fixed += [_fixed(c, "reduced", -int(c["delta_est_gain_ns"]), span) for c in f["changed"]
              if int(c["delta_est_gain_ns"]) < 0]
    m = doc["metric"]
    delta, ci = m.get("delta") or {}, m.get("ci") or {}
    measured = -float(delta["pct"]) if delta.get("pct") is not None else None
    predicted = min(100.0, round(sum(x["predicted_pct"] or 0.0 for x in fixed), 1))
    status = _status(doc["verdict"]["verdict"], measured, predicted) if fixed else None
    for x in fixed:
        x["realised"] = status
    return {
        "fixed": fixed,
        "predicted_pct": predicted if fixed else None,
        "predicted_of": "base longest device span (first to last GPU activity on one device)",
        "measured_pct": measured,
        "measured_interval_pct": [-ci["high_pct"], -ci["low_pct"]] if ci else None,
        "measured_of": delta.get("of"),
        "measured_ns": -int(delta["ns"]) if delta.get("ns") is not None else None,
        "ratio": round(measured / predicted, 2) if fixed and measured is not None and predicted > 0 else None,
        "realised": status,
        "note": _note(len(fixed)),
    }


def _fixed(c: dict[str, Any], how: str, gain_ns: int, span_ns: int) -> dict[str, Any]:
    return {"code": c["code"], "name": c["name"], "fingerprint": c["fingerprint"], "how": how,
            "message": c["message"], "predicted_ns": gain_ns,
            "predicted_pct": pct(gain_ns, span_ns)}


def _status(verdict: str, measured: float | None, predicted: float) -> str:
    """realised | partly realised | not realised | not measured (inconclusive diff, or no metric)."""
    if measured is None or verdict == "inconclusive":
        return "not measured"
    if verdict != "improvement":
        return "not realised"
    if predicted <= 0 or measured >= REALISED_RATIO * predicted:
        return "realised"
    return "partly realised"


def _note(n: int) -> str:
    if n == 0:
        return "no finding of the base run was fixed (none resolved or reduced)"
    shared = "" if n == 1 else f"; the one measured change is shared by the {n} fixed findings and compared " \
                               "with their summed prediction"
    return (f"realised when the measured saving reaches {REALISED_RATIO:.0%} of the predicted one; the two have "
            f"different denominators (predicted_of, measured_of){shared}")
