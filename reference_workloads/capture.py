#!/usr/bin/env python3
"""Capture harness for the reference workloads: runs on the GPU machine.

For each workload (``reference_workloads/*/workload.toml``) and each variant
(baseline, optimized) it

1. times the steps WITHOUT any profiler: ``[run] steps`` timed steps after
   ``[run] warmup`` untimed ones, each step ending in a device synchronize; the
   median is the step time (PyTorch workloads run ``--mode both``: the timed
   steps first with no profiler active, then the profiled steps, one process);
2. captures the formats named in ``[capture] formats``:
   ``nsys``   Nsight Systems 2022.4 (``$NSYS``, from ``source .gpu/activate.sh``):
              ``-t cuda,nvtx,osrt -s none --cpuctxsw=none``, exported to SQLite
              (gzip'd) and the .nsys-rep kept when small;
   ``ncu``    Nsight Compute ``--set full --clock-control none -k <filter> -c N``:
              the .ncu-rep (xz-compressed: ~15x smaller than raw, ~2x smaller than
              gzip) plus ``--page raw --csv`` of the same report (gzip'd);
   ``kineto`` the PyTorch profiler's Chrome-trace JSON (gzip'd), written by the
              workload itself (``--mode both``);
3. writes ``<out>/fixtures/<format>/<CODE>_<name>_<variant>/`` with the trace
   files and a PROVENANCE.json (GPU, driver, CUDA, torch, tool versions, exact
   command, capture time, step times of both variants and the measured gain).

Only the standard library is needed. Typical call on the GPU machine:

    source .gpu/activate.sh
    python3 reference_workloads/capture.py --out $OUT/cap --only IO001_pageable_memcpy,CP001

``--only`` takes codes or folder names; a code selects every pair that has it (``IO001``
selects both IO001 pairs, CUDA and PyTorch).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import lzma
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
VARIANTS = ("baseline", "optimized")
NSYS_REP_KEEP_BYTES = 1_500_000  # keep the .nsys-rep only when it is this small
FIXTURE_WARN_BYTES = 5_000_000


def log(msg: str) -> None:
    print(f"[capture {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(cmd: list[str], timeout: int = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        log(f"TIMEOUT after {timeout}s: {shlex.join(cmd)}")
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return subprocess.CompletedProcess(cmd, 124, out, err)
    except OSError as e:
        log(f"cannot run {cmd[0]}: {e}")
        return subprocess.CompletedProcess(cmd, 127, "", str(e))
    log(f"rc={p.returncode} {time.time() - t0:.1f}s: {shlex.join(cmd)[:200]}")
    if p.returncode != 0:
        log("stderr tail: " + (p.stderr or "")[-1500:])
        log("stdout tail: " + (p.stdout or "")[-800:])
    return p


def first_line(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        out = (p.stdout or p.stderr).strip().splitlines()
        return out[-1].strip() if out else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def environment() -> dict:
    env: dict = {}
    q = first_line(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,count", "--format=csv,noheader"])
    parts = [p.strip() for p in q.split(",")]
    env["gpu"] = parts[0] if parts else ""
    env["driver"] = parts[1] if len(parts) > 1 else ""
    env["gpu_memory"] = parts[2] if len(parts) > 2 else ""
    env["gpu_count"] = int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else None
    smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout
    m = re.search(r"CUDA Version:\s*([\d.]+)", smi)
    env["cuda_driver_api"] = m.group(1) if m else ""
    tv = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch,json;print(json.dumps([torch.__version__, torch.version.cuda,"
            " torch.backends.cudnn.version()]))",
        ],
        capture_output=True,
        text=True,
    )
    try:
        env["torch"], env["torch_cuda"], env["cudnn"] = json.loads(tv.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        env["torch"] = env["torch_cuda"] = env["cudnn"] = ""
    env["python"] = sys.version.split()[0]
    nsys = os.environ.get("NSYS", "")
    env["nsys_path"] = nsys
    env["nsys"] = first_line([nsys, "--version"]) if nsys else ""
    env["ncu"] = first_line(["ncu", "--version"])
    info = os.path.join(REPO, "build-ref", "BUILD_INFO.json")
    if os.path.isfile(info):
        with open(info) as f:
            env["nvcc_build"] = json.load(f).get("nvcc", "")
    env["kernel"] = os.uname().release
    return env


def load_workloads(only: set[str] | None) -> list[tuple[str, dict]]:
    out = []
    for d in sorted(os.listdir(HERE)):
        p = os.path.join(HERE, d, "workload.toml")
        if not os.path.isfile(p):
            continue
        with open(p, "rb") as f:
            spec = tomllib.load(f)
        if only and spec["code"] not in only and d not in only:
            continue
        out.append((d, spec))
    return out


def program(d: str, spec: dict, variant: str) -> list[str]:
    if spec["language"] == "cuda":
        return [f"build-ref/{d}/{variant}"]
    if spec["language"] == "pytorch-dist":  # one process per GPU
        n = spec["run"].get("nproc", 2)
        return ["torchrun", "--standalone", f"--nproc_per_node={n}", f"reference_workloads/{d}/{variant}.py"]
    return ["python3", f"reference_workloads/{d}/{variant}.py"]


def parse_result(stdout: str) -> dict | None:
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def gz(src: str, dst: str) -> None:
    with open(src, "rb") as fi, gzip.open(dst, "wb", compresslevel=9) as fo:
        shutil.copyfileobj(fi, fo)


def file_entry(path: str) -> dict:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    size = os.path.getsize(path)
    if size > FIXTURE_WARN_BYTES:
        log(f"WARNING: {path} is {size} bytes")
    return {"bytes": size, "sha256": h.hexdigest()}


class Capturer:
    def __init__(self, out: str, env: dict, args: argparse.Namespace):
        self.out, self.env, self.args = out, env, args
        self.tmp = os.path.join(out, "tmp")
        os.makedirs(self.tmp, exist_ok=True)
        self.summary: list[dict] = []

    def fixture_dir(self, fmt: str, scenario: str) -> str:
        p = os.path.join(self.out, "fixtures", fmt, scenario)
        os.makedirs(p, exist_ok=True)
        return p

    # -- one variant ------------------------------------------------------------------
    def time_variant(self, d: str, spec: dict, variant: str, trace: str | None) -> tuple[dict | None, list[str]]:
        run = spec["run"]
        base = program(d, spec, variant) + [str(a) for a in run.get("args", [])]
        steps = self.args.steps or run.get("steps", 10)
        warmup = run.get("warmup", 2)
        if spec["language"] != "cuda":
            cmd = base + [
                "--mode",
                "both" if trace else "time",
                "--steps",
                str(steps),
                "--warmup",
                str(warmup),
                "--profile-steps",
                str(spec["capture"].get("profile_steps", 3)),
            ]
            if trace:
                cmd += ["--trace", trace]
        else:
            cmd = base + ["--steps", str(steps), "--warmup", str(warmup)]
        p = sh(cmd, timeout=self.args.timeout)
        res = parse_result(p.stdout) if p.returncode == 0 else None
        return res, cmd

    def nsys_variant(self, d: str, spec: dict, variant: str, scenario: str) -> dict:
        nsys = self.env.get("nsys_path")
        if not nsys:
            return {"error": "NSYS not set (source .gpu/activate.sh)"}
        prefix = os.path.join(self.tmp, scenario)
        steps = spec["capture"].get("profile_steps", 3)
        prog = program(d, spec, variant) + [str(a) for a in spec["run"].get("args", [])]
        prog += ["--steps", str(steps), "--warmup", "1"]
        cmd = [
            nsys,
            "profile",
            "-t",
            "cuda,nvtx,osrt",
            "-s",
            "none",
            "--cpuctxsw=none",
            *spec["capture"].get("nsys_flags", []),
            "--force-overwrite=true",
            "-o",
            prefix,
            *prog,
        ]
        p = sh(cmd, timeout=self.args.timeout)
        rep = prefix + ".nsys-rep"
        if p.returncode != 0 or not os.path.isfile(rep):
            return {"error": f"nsys profile rc={p.returncode}", "command": shlex.join(cmd)}
        res = parse_result(p.stdout)
        e = sh(
            [nsys, "export", "--type", "sqlite", "--force-overwrite=true", "-o", prefix + ".sqlite", rep],
            timeout=self.args.timeout,
        )
        if e.returncode != 0 or not os.path.isfile(prefix + ".sqlite"):
            return {"error": f"nsys export rc={e.returncode}", "command": shlex.join(cmd)}
        fdir = self.fixture_dir("nsys", scenario)
        files = {}
        gz(prefix + ".sqlite", os.path.join(fdir, f"{scenario}.sqlite.gz"))
        files[f"{scenario}.sqlite.gz"] = file_entry(os.path.join(fdir, f"{scenario}.sqlite.gz"))
        omitted = None
        if os.path.getsize(rep) <= NSYS_REP_KEEP_BYTES:
            shutil.copy(rep, os.path.join(fdir, f"{scenario}.nsys-rep"))
            files[f"{scenario}.nsys-rep"] = file_entry(os.path.join(fdir, f"{scenario}.nsys-rep"))
        else:
            omitted = os.path.getsize(rep)
        rel = lambda c: c.replace(nsys, "$NSYS").replace(self.tmp + "/", "")  # noqa: E731
        return {
            "command": rel(shlex.join(cmd)),
            "export_command": f"$NSYS export --type sqlite -o {scenario}.sqlite {scenario}.nsys-rep",
            "files": files,
            "nsys_rep_omitted_bytes": omitted,
            "under_profiler_step_ms": (res or {}).get("step_ms"),
            "sqlite_bytes_uncompressed": os.path.getsize(prefix + ".sqlite"),
        }

    def ncu_variant(self, d: str, spec: dict, variant: str, scenario: str) -> dict:
        cap = spec["capture"]
        kfilter = cap.get("ncu_kernel", "")
        count = int(cap.get("ncu_count", {}).get(variant, 1))
        prefix = os.path.join(self.tmp, scenario)
        prog = program(d, spec, variant) + [str(a) for a in spec["run"].get("args", [])]
        if spec["language"] != "cuda":
            prog += ["--mode", "ncu", "--steps", "1", "--warmup", "1"]
        else:
            prog += ["--steps", "1", "--warmup", "0"]
        cmd = [
            "ncu",
            "--set",
            "full",
            "--clock-control",
            "none",
            "--import-source",
            "yes" if spec["language"] == "cuda" else "no",
            "-k",
            kfilter,
            "-c",
            str(count),
            "-f",
            "-o",
            prefix,
            *prog,
        ]
        p = sh(cmd, timeout=self.args.timeout)
        rep = prefix + ".ncu-rep"
        if p.returncode != 0 or not os.path.isfile(rep):
            return {
                "error": f"ncu rc={p.returncode}",
                "command": shlex.join(cmd).replace(self.tmp + "/", ""),
                "stderr_tail": (p.stderr or "")[-600:],
            }
        fdir = self.fixture_dir("ncu", scenario)
        files = {}
        # .ncu-rep compresses ~15x with xz (~9x with gzip): keep it as .ncu-rep.xz.
        xz_path = os.path.join(fdir, f"{scenario}.ncu-rep.xz")
        with open(rep, "rb") as fi, lzma.open(xz_path, "wb", preset=9) as fo:
            shutil.copyfileobj(fi, fo)
        files[f"{scenario}.ncu-rep.xz"] = file_entry(xz_path)
        csv_cmd = ["ncu", "--import", rep, "--csv", "--page", "raw"]
        c = sh(csv_cmd, timeout=self.args.timeout)
        if c.returncode == 0:
            csv_path = os.path.join(fdir, f"{scenario}.raw.csv.gz")
            with gzip.open(csv_path, "wt", compresslevel=9) as f:
                f.write(c.stdout)
            files[f"{scenario}.raw.csv.gz"] = file_entry(csv_path)
        rel = lambda s: s.replace(self.tmp + "/", "")  # noqa: E731
        return {
            "command": rel(shlex.join(cmd)),
            "csv_command": f"ncu --import {scenario}.ncu-rep --csv --page raw > {scenario}.raw.csv",
            "files": files,
        }

    # -- one workload ---------------------------------------------------------------
    def workload(self, d: str, spec: dict) -> None:
        formats = [f for f in spec["capture"]["formats"] if f not in self.args.skip]
        if not spec["capture"].get("ncu_kernel"):
            formats = [f for f in formats if f != "ncu"]
        timing: dict[str, dict | None] = {}
        per_format: dict[str, dict[str, dict]] = {f: {} for f in formats}
        commands: dict[str, str] = {}
        utc = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for v in VARIANTS:
            scenario = f"{d}_{v}"
            trace = None
            if "kineto" in formats:
                trace = os.path.join(self.tmp, f"{scenario}.json.gz")
            res, cmd = self.time_variant(d, spec, v, trace)
            timing[v] = res
            commands[v] = shlex.join(cmd).replace(self.tmp + "/", "")
            if "kineto" in formats:
                # One trace, or one per rank (x.rank<R>.json.gz) for torchrun workloads.
                traces = sorted(f for f in os.listdir(self.tmp) if f.startswith(scenario) and f.endswith(".json.gz"))
                if res and traces:
                    fdir = self.fixture_dir("kineto", scenario)
                    files = {}
                    for f in traces:
                        dst = os.path.join(fdir, f)
                        shutil.move(os.path.join(self.tmp, f), dst)
                        files[f] = file_entry(dst)
                    per_format["kineto"][v] = {
                        "command": commands[v],
                        "files": files,
                        "under_profiler_step_ms": res.get("profiled_step_ms"),
                    }
                else:
                    per_format["kineto"][v] = {"error": "workload failed", "command": commands[v]}
            if "nsys" in formats:
                per_format["nsys"][v] = self.nsys_variant(d, spec, v, scenario)
            if "ncu" in formats:
                per_format["ncu"][v] = self.ncu_variant(d, spec, v, scenario)
        self.write_provenance(d, spec, timing, per_format, commands, utc)

    def write_provenance(self, d, spec, timing, per_format, commands, utc) -> None:
        b, o = timing.get("baseline"), timing.get("optimized")
        bm = b.get("median_ms") if b else None
        om = o.get("median_ms") if o else None
        gain = round((bm - om) / bm * 100.0, 2) if bm and om else None
        rtol = spec["expected"].get("check_rtol", 1e-6)
        check = None
        if b and o:
            cb, co = b.get("check", 0.0), o.get("check", 0.0)
            rel = abs(cb - co) / max(abs(cb), 1e-30)
            check = {"baseline": cb, "optimized": co, "rel_diff": rel, "rtol": rtol, "ok": rel <= rtol}
        step_times = {
            "baseline_median": bm,
            "optimized_median": om,
            "repeats": (b or o or {}).get("steps"),
            "all": {"baseline": b.get("step_ms") if b else None, "optimized": o.get("step_ms") if o else None},
            "how": "host wall clock per step, each step ends in a device synchronize; "
            "no profiler attached; median of `repeats` steps after warm-up",
        }
        is_cuda = spec["language"] == "cuda"
        env = self.env
        if spec["language"] == "pytorch-dist":
            step_times["how"] += "; rank 0's clock (the ranks are coupled by the collectives)"
        for fmt, variants in per_format.items():
            for v, cap in variants.items():
                scenario = f"{d}_{v}"
                prov = {
                    "scenario": scenario,
                    "workload": d,
                    "code": spec["code"],
                    "variant": v,
                    "format": fmt,
                    "title": spec["title"],
                    "chapter": spec["chapter"],
                    "related_chapters": spec.get("related_chapters", []),
                    "book_patterns": spec.get("book_patterns", []),
                    "rule": spec["rule"]["name"],
                    "expected": {
                        "class": spec["expected"]["baseline_class"]
                        if v == "baseline"
                        else (spec["expected"].get("optimized_class") or None),
                        "top_finding": spec["expected"]["baseline_top_finding"] if v == "baseline" else None,
                        "absent": [] if v == "baseline" else spec["expected"].get("optimized_absent", []),
                        "also_expected": spec["rule"].get("also_expected", []) if v == "baseline" else [],
                    },
                    "gpu": env.get("gpu"),
                    "gpu_memory": env.get("gpu_memory"),
                    "gpus_used": spec["run"].get("nproc", 1),
                    "gpus_on_machine": env.get("gpu_count"),
                    "driver": env.get("driver"),
                    "cuda": {
                        "driver_api": env.get("cuda_driver_api"),
                        "program_runtime": "11.8 (nvcc 11.8, cudart static)" if is_cuda else env.get("torch_cuda"),
                    },
                    "torch": None if is_cuda else env.get("torch"),
                    "tools": {
                        "nsys": env.get("nsys") if fmt == "nsys" else None,
                        "ncu": env.get("ncu") if fmt == "ncu" else None,
                        "torch": env.get("torch") if not is_cuda else None,
                        "nvcc": env.get("nvcc_build") if is_cuda else None,
                        "cudnn": env.get("cudnn") if not is_cuda else None,
                        "python": env.get("python") if not is_cuda else None,
                    },
                    "host_kernel": env.get("kernel"),
                    "command": cap.get("command"),
                    "timing_command": commands.get(v),
                    "capture_utc": utc,
                    "step_time_ms": step_times,
                    "measured_gain_pct": gain,
                    "check": check,
                    "workload_notes": (timing.get(v) or {}).get("notes"),
                }
                for k in (
                    "export_command",
                    "csv_command",
                    "files",
                    "nsys_rep_omitted_bytes",
                    "under_profiler_step_ms",
                    "sqlite_bytes_uncompressed",
                    "error",
                    "stderr_tail",
                ):
                    if cap.get(k) is not None:
                        prov[k] = cap[k]
                with open(os.path.join(self.fixture_dir(fmt, scenario), "PROVENANCE.json"), "w") as f:
                    json.dump(prov, f, indent=2)
        errors = {
            f"{fmt}/{v}": cap["error"] for fmt, vs in per_format.items() for v, cap in vs.items() if "error" in cap
        }
        row = {
            "workload": d,
            "baseline_ms": bm,
            "optimized_ms": om,
            "gain_pct": gain,
            "check_ok": check["ok"] if check else None,
            "errors": errors,
        }
        self.summary.append(row)
        log(
            f"RESULT {d}: baseline {bm} ms, optimized {om} ms, gain {gain}%, "
            f"check {row['check_ok']}, errors {errors or 'none'}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description="Capture the reference workloads on a GPU machine.")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated codes or folder names")
    ap.add_argument("--language", default="", help="only workloads in this language (cuda, pytorch)")
    ap.add_argument("--skip", default="", help="comma-separated formats to skip (nsys,ncu,kineto)")
    ap.add_argument("--steps", type=int, default=0, help="override timed steps (smoke runs)")
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--budget-s", type=int, default=0, help="stop starting workloads after this")
    ap.add_argument("--tar", default="", help="pack <out>/fixtures and the log into this tar.gz")
    args = ap.parse_args()
    args.skip = set(filter(None, args.skip.split(",")))
    only = set(filter(None, args.only.split(","))) or None
    os.makedirs(args.out, exist_ok=True)
    tarball = os.path.join(REPO, "build-ref.tar.xz")
    if not os.path.isdir(os.path.join(REPO, "build-ref")) and os.path.isfile(tarball):
        with tarfile.open(tarball) as t:
            t.extractall(REPO)
    env = environment()
    log("environment: " + json.dumps(env))
    cap = Capturer(args.out, env, args)
    t0 = time.time()
    for d, spec in load_workloads(only):
        if args.language and spec["language"] != args.language:
            continue
        if args.budget_s and time.time() - t0 > args.budget_s:
            log(f"budget exhausted, skipping {d}")
            cap.summary.append({"workload": d, "skipped": "budget"})
            continue
        log(f"=== {d}")
        try:
            cap.workload(d, spec)
        except Exception as e:  # keep going: one broken workload must not lose the others
            log(f"FAILED {d}: {e!r}")
            cap.summary.append({"workload": d, "errors": {"harness": repr(e)}})
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"environment": env, "results": cap.summary}, f, indent=2)
    shutil.rmtree(cap.tmp, ignore_errors=True)
    print("\nworkload                                   baseline_ms  optimized_ms  gain%   check  errors")
    for r in cap.summary:
        status = r.get("errors") or r.get("skipped") or ""
        print(
            f"{r['workload']:<42} {r.get('baseline_ms') or 0:>11.3f} {r.get('optimized_ms') or 0:>13.3f}"
            f" {r.get('gain_pct') or 0:>6.1f} {str(r.get('check_ok')):>6}  {status}"
        )
    if args.tar:
        with tarfile.open(args.tar, "w:gz") as t:
            t.add(os.path.join(args.out, "fixtures"), arcname="fixtures")
            t.add(os.path.join(args.out, "summary.json"), arcname="summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
