"""Steady-state steps: the windows a run's verdict and idle accounting use when the trace marks steps.

A capture usually holds start-up (allocation, data generation, warm-up) as well as the steps the
user cares about. When the trace names its iterations (Kineto `ProfilerStep#N`, or NVTX / user
ranges called `step`, `iteration`, `train_step`, `Step 3`, ...), shares and idle gaps are taken
inside those ranges only, so start-up time does not pose as a bottleneck of the loop. Traces with
no such ranges fall back to each device's whole span.
"""

from __future__ import annotations

import weakref

from advisor import metrics
from advisor.model.store import Run

# Lower-cased range names that mark one iteration (RE2, matched against the whole name).
STEP_PATTERN = r"^(profilerstep#[0-9]+|(train(ing)?[ _-]?)?(step|iter|iteration)s?([ _#:-]*[0-9]+)?)$"
# Warm-up iterations marked the same way (counted as iterations, not as steady state).
WARMUP_PATTERN = r"^warm[ _-]?up([ _#:-]*[0-9]+)?$"


# run -> its step windows, computed once per run (the verdict and several rules ask)
_STEPS: weakref.WeakKeyDictionary[Run, list[metrics.Window]] = weakref.WeakKeyDictionary()


def step_windows(run: Run) -> list[metrics.Window]:
    """One window per (step instance, device it feeds) with the timeline class times inside it;
    empty when the trace marks no steps. The windows are also kept in the temp table m_step_windows
    (win_id, device_id, start_ns, end_ns) for the metrics that clip to steps (idle_in_steps, ...)."""
    if run in _STEPS:
        return _STEPS[run]
    steps: list[metrics.Window] = []
    if run.count("ranges") and (run.count("kernels") or run.count("memops")):
        steps = metrics.shares(run, "step_windows", step_pattern=STEP_PATTERN)
        metrics.copy_windows(run, "m_step_windows")
    _STEPS[run] = steps
    return steps


def step_count(run: Run) -> int:
    """Step instances in the trace (the most on any one device); 0 when none are marked."""
    per: dict[int, int] = {}
    for w in step_windows(run):
        per[w.device_id] = per.get(w.device_id, 0) + 1
    return max(per.values(), default=0)
