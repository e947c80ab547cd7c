"""Steady-state steps: the windows a run's verdict and idle accounting use when the trace marks steps.

A capture usually holds start-up (allocation, data generation, warm-up) as well as the steps the
user cares about. When the trace names its iterations (Kineto `ProfilerStep#N`, or NVTX / user
ranges called `step`, `iteration`, `train_step`, `Step 3`, ...: metric step_windows), shares and idle gaps are taken
inside those ranges only, so start-up time does not pose as a bottleneck of the loop. Traces with
no such ranges fall back to each device's whole span.
"""

from __future__ import annotations

from advisor import metrics
from advisor.model.store import Run

# Warm-up iterations marked the same way (counted as iterations, not as steady state).
WARMUP_PATTERN = r"^warm[ _-]?up([ _#:-]*[0-9]+)?$"


def step_windows(run: Run) -> list[metrics.WindowTimes]:
    """One window per (step instance, device it feeds) with the timeline class times inside it (metric
    step_windows, which the metrics that clip to steps read on their own); empty when the trace marks no
    steps. Computed once per run (the verdict and several rules ask), kept in the run's metric session."""
    memo = metrics.session(run).memo
    if "steps" not in memo:
        marked = run.count("ranges") and (run.count("kernels") or run.count("memops"))
        memo["steps"] = metrics.shares(run, "step_windows") if marked else []
    steps: list[metrics.WindowTimes] = memo["steps"]
    return steps
