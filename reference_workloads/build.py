#!/usr/bin/env python3
"""Build the CUDA C++ reference workloads with CUDA 11.8's nvcc.

Nsight Systems 2022.4 (the one that runs on the GPU machines) traces kernels only
for programs built against CUDA <= 11.8, so every workload is built here with
Debian's /usr/bin/nvcc (11.8), for sm_90, with the CUDA runtime linked
statically, and the binaries travel to the GPU machine.

    python3 reference_workloads/build.py            # build into build-ref/
    python3 reference_workloads/build.py --pack     # ... and pack build-ref.tar.xz
    python3 reference_workloads/build.py --only ME002,CP002   # codes or folder names

Outputs (both ignored by git): build-ref/<workload>/{baseline,optimized},
build-ref/BUILD_INFO.json (compiler version, flags, ptxas resource usage), and
with --pack build-ref.tar.xz (what the capture call carries).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUILD = os.path.join(REPO, "build-ref")
NVCC = os.environ.get("NVCC_118", "/usr/bin/nvcc")
BASE_FLAGS = [
    "-O3",
    "-std=c++17",
    "-arch=sm_90",
    "-cudart",
    "static",
    "-lineinfo",
    "-Xptxas",
    "-v",
    "-I",
    os.path.join(HERE, "common"),
]


def workloads(only: set[str] | None) -> list[tuple[str, dict]]:
    out = []
    for d in sorted(os.listdir(HERE)):
        toml_path = os.path.join(HERE, d, "workload.toml")
        if not os.path.isfile(toml_path):
            continue
        with open(toml_path, "rb") as f:
            spec = tomllib.load(f)
        if spec.get("language") != "cuda":
            continue
        if only and spec["code"] not in only and d not in only:
            continue
        out.append((d, spec))
    return out


def build_one(d: str, spec: dict, variant: str) -> dict:
    src = os.path.join(HERE, d, f"{variant}.cu")
    dst_dir = os.path.join(BUILD, d)
    os.makedirs(dst_dir, exist_ok=True)
    dst = os.path.join(dst_dir, variant)
    flags = BASE_FLAGS + list(spec.get("build", {}).get("nvcc_flags", []))
    cmd = [NVCC, *flags, "-o", dst, src]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{d}/{variant}: nvcc failed\n{p.stdout}\n{p.stderr}")
    subprocess.run(["strip", dst], check=True)
    # Resource usage per kernel, from ptxas -v (registers, spills, shared memory).
    usage = {}
    current = None
    for line in p.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = m.group(1)
            continue
        if current and ("spill" in line or "registers" in line):
            usage.setdefault(current, []).append(line.split(":", 1)[-1].strip())
    return {
        "binary": os.path.relpath(dst, REPO),
        "source": os.path.relpath(src, REPO),
        "command": " ".join(os.path.relpath(c, REPO) if c.startswith(REPO) else c for c in cmd),
        "ptxas": usage,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated codes or folder names")
    ap.add_argument("--pack", action="store_true", help="also write build-ref.tar.xz")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    only = set(filter(None, args.only.split(","))) or None
    version = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout.strip()
    jobs = [(d, spec, v) for d, spec in workloads(only) for v in ("baseline", "optimized")]
    info_path = os.path.join(BUILD, "BUILD_INFO.json")
    info = {"nvcc": version.splitlines()[-1] if version else NVCC, "base_flags": BASE_FLAGS[:-2], "binaries": {}}
    if os.path.isfile(info_path) and only:
        with open(info_path) as f:
            info["binaries"] = json.load(f).get("binaries", {})
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        futs = {pool.submit(build_one, d, s, v): (d, v) for d, s, v in jobs}
        for fut in concurrent.futures.as_completed(futs):
            d, v = futs[fut]
            try:
                info["binaries"][f"{d}/{v}"] = fut.result()
                print(f"built {d}/{v}")
            except RuntimeError as e:
                failed += 1
                print(e, file=sys.stderr)
    os.makedirs(BUILD, exist_ok=True)
    info["binaries"] = dict(sorted(info["binaries"].items()))
    with open(info_path, "w") as f:
        json.dump(info, f, indent=2)
    if args.pack and not failed:
        tar_path = os.path.join(REPO, "build-ref.tar.xz")
        with tarfile.open(tar_path, "w:xz", preset=9) as tar:
            tar.add(BUILD, arcname="build-ref")
        print(f"packed {os.path.relpath(tar_path, REPO)}: {os.path.getsize(tar_path)} bytes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
