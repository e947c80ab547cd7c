"""The built wheel, installed into a fresh virtual environment, gives every command and format (issue 21).

Why: an editable install hides missing package data (SQL metrics, templates, TUI styles) and a
dependency that only an extra brought in. The wheel is built from this checkout and installed with
`--no-deps` into a venv that sees the machine's packages (so the test needs no network); the installed
distribution must be `gpu-advisor` with textual, plotext and ncu-report among its core requirements.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import pytest

from tests.conftest import _absent

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "fixtures/nsys/IO001_pageable_memcpy_baseline/IO001_pageable_memcpy_baseline.sqlite.gz"
NEW = ROOT / "fixtures/nsys/IO001_pageable_memcpy_optimized/IO001_pageable_memcpy_optimized.sqlite.gz"
NCU = ROOT / "fixtures/ncu/ME001_uncoalesced_access_baseline/ME001_uncoalesced_access_baseline.ncu-rep.xz"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    # built from a copy of what the build reads (the top-level files and the four package folders): setuptools
    # writes build/ and *.egg-info into the tree it builds, and a build/lib left there by an earlier build would put
    # modules deleted since into the wheel; a whole-checkout copy would also carry ignored data (.bench's traces)
    src = work / "src"
    src.mkdir()
    for f in ROOT.iterdir():
        if f.is_file():
            shutil.copy2(f, src / f.name)
    for package in ("advisor", "parsers", "rules", "reports"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"), str(src)],
                   check=True, capture_output=True, text=True)
    (wheel,) = (work / "dist").glob("gpu_advisor-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for data in ("advisor/metrics/idle_claims.sql", "advisor/metrics/timeline_slices.sql", "advisor/tui/advisor.tcss",
                 "advisor/reports/templates/base.html", "advisor/parsers/kineto/__init__.py",
                 "advisor/parsers/mappings/kineto.toml", "advisor/rules/registry.py"):
        assert data in names, f"{data} missing from {wheel.name}"
    env_dir = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    subprocess.run([str(env_dir / "bin/python"), "-m", "pip", "install", "--no-deps", "--quiet", str(wheel)],
                   check=True, capture_output=True, text=True)
    return env_dir


def _advisor(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([str(venv / "bin/advisor"), *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def test_installed_distribution(venv: Path) -> None:
    code = ("import importlib.metadata as m, advisor, json; d = m.distribution('gpu-advisor'); "
            "print(json.dumps([advisor.__file__, d.requires]))")
    out = subprocess.run([str(venv / "bin/python"), "-c", code], capture_output=True, text=True, check=True,
                         cwd="/").stdout
    where, requires = json.loads(out)
    assert where.startswith(str(venv)), where
    core = {r.split(">")[0].split("=")[0].split("<")[0].strip() for r in requires if "extra ==" not in r}
    assert {"textual", "plotext", "ncu-report"} <= core


def test_every_command_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    runs = {
        "analyze": ["analyze", str(TRACE), "--format", "json"],
        "analyze-ncu-rep": ["analyze", str(NCU)],
        "report": ["report", str(TRACE), "-o", "r.html"],
        "diff": ["diff", str(TRACE), str(NEW)],
        "export": ["export", str(TRACE), "-o", "t.json"],
        "explain": ["explain", "pageable-memcpy"],
        "rules": ["rules"],
        "cache": ["cache", "info"],
    }
    for name, argv in runs.items():
        res = _advisor(venv, *argv, cwd=tmp_path)
        assert res.returncode in (0, 1), (name, res.stderr)
        assert res.stdout.strip() or "wrote" in res.stderr, name
    assert json.loads(_advisor(venv, *runs["analyze"], cwd=tmp_path).stdout)["findings"][0]["code"] == "IO001"
    assert "Profiled kernels" in _advisor(venv, *runs["analyze-ncu-rep"], cwd=tmp_path).stdout
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


def test_tui_from_the_wheel_in_tmux_at_160x48(venv: Path, tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        _absent("tmux is not installed (scripts/test-setup.sh installs it)")
    base = ["tmux", "-L", f"advisor-wheel-{os.getpid()}-{uuid.uuid4().hex[:8]}"]
    cmd = f"{venv / 'bin/advisor'} tui {TRACE}; sleep 30"
    try:
        subprocess.run([*base, "new-session", "-d", "-s", "tui", "-x", "160", "-y", "48",
                        "-e", f"ADVISOR_CACHE_DIR={os.environ['ADVISOR_CACHE_DIR']}", "-e", "TERM=xterm-256color", cmd],
                       check=True)
        deadline, screen = time.monotonic() + 120, ""
        while time.monotonic() < deadline:
            screen = subprocess.run([*base, "capture-pane", "-p", "-t", "tui"], capture_output=True, text=True).stdout
            if "Verdict" in screen and "o Overview" in screen:
                break
            time.sleep(0.3)
        assert "Verdict" in screen, screen
        assert max(len(line.rstrip()) for line in screen.splitlines()) > 100, "the header spans > 100 columns"
    finally:
        subprocess.run([*base, "kill-server"], capture_output=True)
