"""Helpers for the hostile-use tests: run `advisor` in child processes, compare results, hash inputs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, real_path

# Small inputs of each format the cache handles differently (plain, decompressed, exported, Kineto).
_LA001 = "fixtures/nsys/LA001_small_kernel_storm_baseline/LA001_small_kernel_storm_baseline"
INPUTS = {
    "sqlite": ("real", "nsys-ai/mock_rtx3080_wsl2.sqlite"),
    "sqlite.gz": ("repo", f"{_LA001}.sqlite.gz"),
    "kineto": ("repo", "fixtures/kineto/LA008_eager_small_op_storm_baseline/"
                       "LA008_eager_small_op_storm_baseline.json.gz"),
    "nsys-rep": ("repo", f"{_LA001}.nsys-rep"),
}
VOLATILE = ("elapsed", "seconds")  # keys whose values are timings, not results


def source(kind: str) -> Path:
    where, rel = INPUTS[kind]
    return real_path(rel) if where == "real" else ROOT / rel


def copy_input(kind: str, dest: Path) -> Path:
    """A private copy of the input (the test may check that nothing appears beside it)."""
    src = source(kind)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / src.name
    shutil.copyfile(src, out)
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def env_with(cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, ADVISOR_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    env.pop("ADVISOR_THREADS", None)
    env.update(extra)
    return env


def popen(args: list[str], cache: Path, preexec: Callable[[], None] | None = None,
          **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "advisor", *args],
        cwd=ROOT, env=env_with(cache, **extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=preexec,
    )


@dataclass
class Done:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return normalized(json.loads(self.out))

    def error_lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.strip()]


def run(args: list[str], cache: Path, timeout: float = 300, preexec: Callable[[], None] | None = None,
        **extra: str) -> Done:
    p = popen(args, cache, preexec, **extra)
    out, err = p.communicate(timeout=timeout)
    return Done(p.returncode, out, err)


def normalized(doc: Any) -> Any:
    """The analysis without timings: two runs of one input must give exactly this."""
    if isinstance(doc, dict):
        return {k: normalized(v) for k, v in doc.items() if not any(w in k for w in VOLATILE)}
    if isinstance(doc, list):
        return [normalized(v) for v in doc]
    return doc


def entries(cache: Path) -> list[Path]:
    """Published cache entries (work areas, locks and temporaries start with a dot)."""
    return sorted(p for p in cache.iterdir() if not p.name.startswith(".")) if cache.exists() else []


def leftovers(cache: Path) -> list[str]:
    """Whatever of the work area outlived the processes (nothing should)."""
    work = cache / ".work"
    return sorted(str(p.relative_to(cache)) for p in work.rglob("*")) if work.exists() else []
