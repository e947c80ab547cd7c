"""LA012 recompile probe (not a timed pair): a compiled function called with a new input
shape inside the profiled steps, so Dynamo recompiles mid-run. Writes a Kineto trace whose
steps hold the compile events ('... (dynamo_timed)') and regions 'Torch-Compiled Region: 0/1';
tests use it as the recompile fixture. Also prints which compile-related event names the trace
holds, for the rule's signature.

    python3 reference_workloads/LA012_torch_compile_graph_breaks/recompile_probe.py --trace t.json.gz
"""

import argparse
import collections
import gzip
import json
import os
import shutil

import torch
from torch.profiler import ProfilerActivity, profile, schedule

MARKERS = ("ompile", "ynamo", "Cache Lookup", "CompiledFxGraph", "resume", "guard", "Guard")


def f(x):
    return torch.nn.functional.gelu(x * 2.0 + 1.0).sum(dim=-1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="recompile_probe.json.gz")
    args = ap.parse_args()
    torch._dynamo.config.automatic_dynamic_shapes = False  # every new shape is a new compile
    fn = torch.compile(f)
    shapes = [(64, 512), (64, 512), (96, 512), (96, 512), (128, 512)]
    fn(torch.randn(*shapes[0], device="cuda"))  # first compile outside the profile
    torch.cuda.synchronize()
    sched = schedule(wait=0, warmup=0, active=len(shapes), repeat=1)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched) as prof:
        for shape in shapes:
            for _ in range(4):
                fn(torch.randn(*shape, device="cuda"))
            torch.cuda.synchronize()
            prof.step()
    raw = args.trace[:-3]
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as s, gzip.open(args.trace, "wb", compresslevel=9) as d:
        shutil.copyfileobj(s, d)
    os.remove(raw)
    with gzip.open(args.trace) as fh:
        events = json.load(fh)["traceEvents"]
    names = collections.Counter(
        (e.get("cat"), e.get("name")) for e in events if any(m in str(e.get("name", "")) for m in MARKERS)
    )
    print(json.dumps({"torch": torch.__version__, "names": [[c, n, k] for (c, n), k in names.most_common(80)]}))


if __name__ == "__main__":
    main()
