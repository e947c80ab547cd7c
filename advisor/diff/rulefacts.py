"""The rule engine's view of a capture (findings and verdict class), and how two views differ.

Findings are matched by their stable `fingerprint` (rule code + normalized location, no times), so
"the same problem, now smaller" is one `changed` entry rather than one resolved plus one new.
The rule engine and the classifier are optional at this layer: when either is absent (or fails on
a trace) the diff says so instead of inventing an empty list.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.interrupt import raise_if_interrupted
from advisor.model.store import Run

CHANGED_MIN_REL = 0.10  # a finding whose estimated gain moved by 10% or more is "changed"
CHANGED_MIN_NS = 100_000  # ...and by at least 0.1 ms


@dataclass
class RuleFacts:
    findings: list[dict[str, Any]] | None  # None: the rule engine did not run
    verdict_class: str | None
    verdict_cause: str | None
    notes: list[str] = field(default_factory=list)


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        d = to_dict()
        return d if isinstance(d, dict) else {}
    return {k: getattr(obj, k) for k in dir(obj) if not k.startswith("_") and not callable(getattr(obj, k))}


def _findings(run: Run, notes: list[str]) -> list[dict[str, Any]] | None:
    try:
        engine = importlib.import_module("advisor.engine.findings")
    except ImportError:
        notes.append("rule engine not available: findings are not compared")
        return None
    try:
        report = engine.run_rules(run)
    except Exception as e:  # a rule bug must not sink the diff; it is reported instead
        raise_if_interrupted(e)
        notes.append(f"rule engine failed on {run.info.get('source_path')}: {type(e).__name__}: {e}")
        return None
    items = getattr(report, "findings", report)
    return [_as_dict(f) for f in items]


def _verdict(run: Run, notes: list[str]) -> tuple[str | None, str | None]:
    try:
        mod = importlib.import_module("advisor.rules.classify")
    except ImportError:
        notes.append("verdict classifier not available: verdict classes are not compared")
        return None, None
    try:
        v = _as_dict(mod.classify(run))
        if isinstance(v.get("run"), dict):  # RunVerdict: the whole-run verdict is under "run"
            v = v["run"]
    except Exception as e:
        raise_if_interrupted(e)
        notes.append(f"classifier failed on {run.info.get('source_path')}: {type(e).__name__}: {e}")
        return None, None
    cls = v.get("class") or v.get("klass") or v.get("cls") or v.get("verdict_class")
    return (str(cls) if cls is not None else None), (str(v["cause"]) if v.get("cause") else None)


def rule_facts(run: Run) -> RuleFacts:
    notes: list[str] = []
    findings = _findings(run, notes)
    cls, cause = _verdict(run, notes)
    return RuleFacts(findings, cls, cause, notes)


def _brief(f: dict[str, Any]) -> dict[str, Any]:
    return {
        "fingerprint": f.get("fingerprint"),
        "code": f.get("code"),
        "name": f.get("name"),
        "message": f.get("message"),
        "est_gain_ns": int(f.get("est_gain_ns") or 0),
        "location": f.get("location"),
    }


def _by_gain(f: dict[str, Any]) -> int:
    return -int(f.get("est_gain_ns") or 0)


_DEVICE = re.compile(r"\bdevice=(\d+)")


def match_key(f: dict[str, Any], devices: Mapping[int, str] | None) -> str:
    """The fingerprint, or with a device map the code + location with `device=N` replaced by the aligned
    device's key (so rank 3's finding on device 3 matches rank 3's on device 0 of the other run)."""
    loc = f.get("location")
    if devices is None or not isinstance(loc, str) or not _DEVICE.search(loc):
        return str(f.get("fingerprint"))
    return f"{f.get('code')}|" + _DEVICE.sub(lambda m: "device=" + devices.get(int(m.group(1)), m.group(1)), loc)


def diff_findings(base: list[dict[str, Any]] | None, new: list[dict[str, Any]] | None,
                  base_devices: Mapping[int, str] | None = None,
                  new_devices: Mapping[int, str] | None = None) -> dict[str, Any] | None:
    """new / resolved / changed / unchanged, matched by fingerprint (device ids mapped through the device
    alignment when given); None when either side has no findings list."""
    if base is None or new is None:
        return None
    b = {match_key(f, base_devices): f for f in base}
    n = {match_key(f, new_devices): f for f in new}
    changed, unchanged = [], 0
    for fp in b.keys() & n.keys():
        gb, gn = int(b[fp].get("est_gain_ns") or 0), int(n[fp].get("est_gain_ns") or 0)
        moved = abs(gn - gb)
        if moved >= CHANGED_MIN_NS and moved >= CHANGED_MIN_REL * max(gb, 1):
            changed.append(_brief(n[fp]) | {"base_est_gain_ns": gb, "delta_est_gain_ns": gn - gb})
        else:
            unchanged += 1
    changed.sort(key=lambda c: -abs(c["delta_est_gain_ns"]))
    return {
        "new": [_brief(n[fp]) for fp in sorted(n.keys() - b.keys(), key=lambda k: _by_gain(n[k]))],
        "resolved": [_brief(b[fp]) for fp in sorted(b.keys() - n.keys(), key=lambda k: _by_gain(b[k]))],
        "changed": changed,
        "unchanged": unchanged,
    }
