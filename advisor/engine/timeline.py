"""Per-device time split of the GPU timeline: the `time` section, read from the metric `device_time`.

Kernels on concurrent streams overlap, so "kernel time" is the length of the union of kernel
intervals, not a sum; likewise busy time is the union of every GPU activity. Each figure is
reported with its denominator: the device span, from the first to the last GPU activity on that
device (the window in which idle time is meaningful). Which kernels are communication is the
metric layer's definition (`kernel_names`), the one the verdict and the communication rules use.
"""

from __future__ import annotations

from typing import Any

from advisor import metrics
from advisor.model.store import Run

KINDS = ("kernel", "compute", "communication", "memcpy", "memset", "busy")


def device_time(run: Run) -> list[dict[str, Any]]:
    """Per device: span, union time per activity class, busy and idle, all in ns.

    Keys: device_id, rank, span_start_ns, span_end_ns, span_ns, kernel_ns, compute_ns (non-communication
    kernels), communication_ns, memcpy_ns, memset_ns, busy_ns, idle_ns, busy_islands,
    communication_exposed_ns (communication with no other kernel running: the verdict's comm share).
    """
    return [{k: (int(v) if isinstance(v, int) else v) for k, v in r.items()} for r in metrics.query(run, "device_time")]
