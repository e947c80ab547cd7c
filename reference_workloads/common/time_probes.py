"""Time probes without the profiler: for each named probe of realistic_probes.py, 3 warm-up steps, then the median of
`--steps` steps, each ended by a device synchronize (host wall clock): what a fix of a probe measures against it.

    python3 reference_workloads/common/time_probes.py [--steps N] name...
"""

import argparse
import statistics
import time

import torch
from realistic_probes import PROBES


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("names", nargs="+")
    args = ap.parse_args()
    for name in args.names:
        torch.manual_seed(0)
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False  # PyTorch's defaults
        step = PROBES[name]()
        for i in range(3):
            step(i)  # type: ignore[operator]
        torch.cuda.synchronize()
        times = []
        for i in range(args.steps):
            t0 = time.perf_counter()
            step(i)  # type: ignore[operator]
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        print(f"{name}: median {statistics.median(times):.2f} ms per step over {args.steps} (min {min(times):.2f})",
              flush=True)
        del step
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
