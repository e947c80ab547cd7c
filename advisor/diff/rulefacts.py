"""The rule engine's view of a capture (findings and verdict), and how two views differ.

Findings are matched by their stable `fingerprint` (rule code + normalized location, no times), so
"the same problem, now smaller" is one `changed` entry rather than one resolved plus one new.
The rules run once per capture (`rule_facts`), or not at all when an analysis already carries
them (`from_analysis`); a rule engine failure on a trace is said in a note, never an empty list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.engine.analyze import Outcomes
from advisor.engine.findings import classify, run_rules
from advisor.engine.result import Analysis
from advisor.interrupt import raise_if_interrupted
from advisor.model.store import Run
from advisor.rules.base import Finding
from advisor.rules.classify import Verdict

if TYPE_CHECKING:
    from advisor.diff.ops import OpsDiff

CHANGED_MIN_REL = 0.10  # a finding whose estimated gain moved by 10% or more is "changed"
CHANGED_MIN_NS = 100_000  # ...and by at least 0.1 ms


@dataclass(frozen=True)
class RuleFacts:
    """Findings and whole-run verdict of a capture; `outcomes` keeps them for the side's HTML report."""

    findings: tuple[Finding, ...] | None  # None: the rule engine did not run (or failed: see notes)
    verdict: Verdict | None
    notes: tuple[str, ...] = ()
    outcomes: Outcomes | None = None

    @property
    def verdict_class(self) -> str | None:
        return self.verdict.class_ if self.verdict is not None else None

    @property
    def verdict_cause(self) -> str | None:
        return self.verdict.cause or None if self.verdict is not None else None


def rule_facts(run: Run) -> RuleFacts:
    """Run the rules and the classifier once on `run`; a failure becomes a note, not a sunk diff."""
    try:
        report = run_rules(run)
        verdict = classify(run)
    except Exception as e:  # a rule bug must not sink the diff; it is reported instead
        raise_if_interrupted(e)
        return RuleFacts(None, None, (f"rule engine failed on {run.info.get('source_path')}: {type(e).__name__}: {e}",))
    return RuleFacts(report.findings, verdict.run, (), (report, verdict))


def from_analysis(a: Analysis) -> RuleFacts:
    """The facts an analysis already holds (no rule runs again)."""
    if a.report is None or a.verdict is None:
        return RuleFacts(None, None, ("rules not run on one side: findings are not compared",))
    return RuleFacts(a.report.findings, a.verdict.run, (), (a.report, a.verdict))


def _brief(f: Finding) -> dict[str, Any]:
    return {"fingerprint": f.fingerprint, "code": f.code, "name": f.name, "message": f.message,
            "est_gain_ns": f.est_gain_ns, "location": f.location}


_DEVICE = re.compile(r"\bdevice=(\d+)")


def match_key(f: Finding, devices: Mapping[int, str] | None) -> str:
    """The fingerprint, or with a device map the code + location with `device=N` replaced by the aligned
    device's key (so rank 3's finding on device 3 matches rank 3's on device 0 of the other run)."""
    if devices is None or not _DEVICE.search(f.location):
        return f.fingerprint
    return f"{f.code}|" + _DEVICE.sub(lambda m: "device=" + devices.get(int(m.group(1)), m.group(1)), f.location)


@dataclass(frozen=True)
class FindingsDiff:
    """Findings matched across two runs: new, resolved, changed (base, new) pairs, and how many held."""

    new: tuple[Finding, ...]
    resolved: tuple[Finding, ...]
    changed: tuple[tuple[Finding, Finding], ...]
    unchanged: int

    def to_dict(self) -> dict[str, Any]:
        """The `findings` block of the diff document (docs/json-output.md)."""
        changed = [_brief(n) | {"base_est_gain_ns": b.est_gain_ns, "delta_est_gain_ns": n.est_gain_ns - b.est_gain_ns}
                   for b, n in self.changed]
        return {"new": [_brief(f) for f in self.new], "resolved": [_brief(f) for f in self.resolved],
                "changed": changed, "unchanged": self.unchanged}


def match_findings(base: tuple[Finding, ...], new: tuple[Finding, ...], base_devices: Mapping[int, str] | None = None,
                   new_devices: Mapping[int, str] | None = None) -> FindingsDiff:
    """Match by fingerprint (device ids mapped through the device alignment when given); a gain that moved by
    CHANGED_MIN_REL and CHANGED_MIN_NS is `changed`, else unchanged."""
    b = {match_key(f, base_devices): f for f in base}
    n = {match_key(f, new_devices): f for f in new}
    changed, unchanged = [], 0
    for key in b.keys() & n.keys():
        moved = abs(n[key].est_gain_ns - b[key].est_gain_ns)
        if moved >= CHANGED_MIN_NS and moved >= CHANGED_MIN_REL * max(b[key].est_gain_ns, 1):
            changed.append((b[key], n[key]))
        else:
            unchanged += 1
    changed.sort(key=lambda p: -abs(p[1].est_gain_ns - p[0].est_gain_ns))
    return FindingsDiff(tuple(sorted((n[k] for k in n.keys() - b.keys()), key=lambda f: -f.est_gain_ns)),
                        tuple(sorted((b[k] for k in b.keys() - n.keys()), key=lambda f: -f.est_gain_ns)),
                        tuple(changed), unchanged)


def diff_findings(base: tuple[Finding, ...] | None, new: tuple[Finding, ...] | None,
                  base_devices: Mapping[int, str] | None = None,
                  new_devices: Mapping[int, str] | None = None) -> dict[str, Any] | None:
    """The diff document's `findings` block; None when either side has no findings list."""
    if base is None or new is None:
        return None
    return match_findings(base, new, base_devices, new_devices).to_dict()


@dataclass(frozen=True)
class AnalysisDiff:
    """`advisor.diff(a, b)`: the findings matched by fingerprint and the two whole-run verdicts."""

    findings: FindingsDiff
    base_verdict: Verdict | None
    new_verdict: Verdict | None
    ops: OpsDiff | None = None  # per-op TFLOP/s and per-device MFU before and after (advisor/diff/ops.py)

    @property
    def new(self) -> tuple[Finding, ...]:
        return self.findings.new

    @property
    def resolved(self) -> tuple[Finding, ...]:
        return self.findings.resolved

    @property
    def changed(self) -> tuple[tuple[Finding, Finding], ...]:
        return self.findings.changed

    def to_dict(self) -> dict[str, Any]:
        vb, vn = (v.class_ if v is not None else None for v in (self.base_verdict, self.new_verdict))
        return {"findings": self.findings.to_dict(), "verdict_class": {"base": vb, "new": vn},
                "ops": self.ops.to_dict() if self.ops else None}


def diff_analyses(base: Analysis, new: Analysis) -> AnalysisDiff:
    """Two analyses compared by what they already hold (findings, verdicts, the ops and mfu sections)."""
    from advisor.diff.ops import ops_diff

    return AnalysisDiff(match_findings(base.findings, new.findings),
                        base.verdict.run if base.verdict is not None else None,
                        new.verdict.run if new.verdict is not None else None,
                        ops_diff(base.sections, new.sections))
