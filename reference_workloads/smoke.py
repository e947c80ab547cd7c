#!/usr/bin/env python3
"""Quick check that every reference workload runs, on the GPU machine.

CUDA workloads: each binary with 3 timed steps. PyTorch workloads: all in ONE
Python process (torch imported once), 2 timed steps each, no profiler. Prints one
line per variant (median step ms, checksum) and a verdict per pair. Use before a
full capture to catch crashes and to calibrate sizes cheaply.

    python3 reference_workloads/smoke.py [--only CODE,...] [--skip-cuda] [--skip-torch]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time
import tomllib
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "common"))


def specs(only):
    for d in sorted(os.listdir(HERE)):
        p = os.path.join(HERE, d, "workload.toml")
        if os.path.isfile(p):
            with open(p, "rb") as f:
                s = tomllib.load(f)
            if not only or s["code"] in only or d in only:
                yield d, s


def run_cuda(d, s, steps):
    out = {}
    for v in ("baseline", "optimized"):
        cmd = [f"build-ref/{d}/{v}", *map(str, s["run"].get("args", [])), "--steps", str(steps), "--warmup", "1"]
        t0 = time.time()
        p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=180)
        res = None
        for line in reversed(p.stdout.splitlines()):
            if line.startswith("{"):
                res = json.loads(line)
                break
        out[v] = res
        print(
            f"  {d}/{v}: rc={p.returncode} wall={time.time() - t0:.1f}s "
            f"median={res and res['median_ms']:.4} ms check={res and res['check']}"
            + ("" if p.returncode == 0 else f" ERR {p.stderr[-400:]}")
            + (f" [{p.stderr.strip()[-120:]}]" if p.stderr.strip() and p.returncode == 0 else ""),
            flush=True,
        )
    return out


def run_torch(d, s, steps):
    import refwl
    import torch

    out = {}
    for v in ("baseline", "optimized"):
        path = os.path.join(HERE, d, f"{v}.py")
        t0 = time.time()
        try:
            spec = importlib.util.spec_from_file_location(f"wl_{d}_{v}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            ap = refwl._parser(d)
            if hasattr(mod, "add_args"):
                mod.add_args(ap)
            args = ap.parse_args([*map(str, s["run"].get("args", [])), "--steps", str(steps), "--warmup", "1"])
            torch.manual_seed(0)
            wl = mod.build(args)
            try:
                wl.step(0)
                torch.cuda.synchronize()
                times = refwl._run_steps(wl, 1, steps)
                chk = float(wl.check())
            finally:
                wl.close()
            out[v] = {"median_ms": statistics.median(times), "check": chk}
            print(f"  {d}/{v}: wall={time.time() - t0:.1f}s median={out[v]['median_ms']:.4} ms check={chk}", flush=True)
        except Exception:
            out[v] = None
            print(f"  {d}/{v}: FAILED\n{traceback.format_exc()[-1500:]}", flush=True)
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-cuda", action="store_true")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    only = set(filter(None, args.only.split(","))) or None
    tarball = os.path.join(REPO, "build-ref.tar.xz")
    if not os.path.isdir(os.path.join(REPO, "build-ref")) and os.path.isfile(tarball):
        with tarfile.open(tarball) as t:
            t.extractall(REPO)
    rows = []
    for d, s in specs(only):
        if s["language"] == "cuda" and args.skip_cuda or s["language"] == "pytorch" and args.skip_torch:
            continue
        if s["language"] == "pytorch-dist":  # needs torchrun and 2 GPUs: use capture.py
            print(f"== {d}: skipped (pytorch-dist: run it with capture.py on a 2-GPU machine)")
            continue
        print(f"== {d}", flush=True)
        r = run_cuda(d, s, args.steps) if s["language"] == "cuda" else run_torch(d, s, args.steps)
        b, o = r.get("baseline"), r.get("optimized")
        if b and o:
            gain = (b["median_ms"] - o["median_ms"]) / b["median_ms"] * 100
            rel = abs(b["check"] - o["check"]) / max(abs(b["check"]), 1e-30)
            ok = rel <= s["expected"].get("check_rtol", 1e-6)
            rows.append(
                f"{d:<42} {b['median_ms']:>10.3f} {o['median_ms']:>10.3f} {gain:>7.1f}%  "
                f"check_rel={rel:.2e} {'ok' if ok else 'MISMATCH'}"
            )
        else:
            rows.append(f"{d:<42} FAILED")
    print("\n".join(["", "pair                                       base_ms    opt_ms     gain", *rows]))


if __name__ == "__main__":
    main()
