"""End to end: the real `advisor tui` in a real terminal (tmux), driven with keys, screen read back."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import _absent, real_path

pytestmark = [pytest.mark.real, pytest.mark.slow]

FIXTURE = "nsys-ai/mfu_2gpu_before.sqlite"


class Tmux:
    """A tmux server of our own (its own socket), so the user's sessions are never touched."""

    def __init__(self, socket: str) -> None:
        self.base = ["tmux", "-L", socket]

    def __call__(self, *args: str, check: bool = True) -> str:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, check=check).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "tui", check=False)

    def wait_for(self, *needles: str, timeout_s: float = 120.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.screen()
            if all(n in text for n in needles):
                return text
            time.sleep(0.2)
        raise AssertionError(f"{needles} not on screen after {timeout_s}s; screen:\n{self.screen()}")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        _absent("tmux is not installed (scripts/test-setup.sh installs it)")
    t = Tmux(f"advisor-test-{os.getpid()}-{uuid.uuid4().hex[:8]}")  # one server per test: no leftover session
    yield t
    t("kill-server", check=False)


def test_advisor_tui_in_tmux(tmux: Tmux) -> None:
    trace = real_path(FIXTURE)
    cmd = f"{sys.executable} -m advisor tui {trace}; sleep 30"
    env = ["-e", f"ADVISOR_CACHE_DIR={os.environ['ADVISOR_CACHE_DIR']}", "-e", "TERM=xterm-256color"]
    tmux("new-session", "-d", "-s", "tui", "-x", "100", "-y", "30", *env, cmd)
    screen = tmux.wait_for("Verdict", "Do this first", "o Overview")
    assert "mfu_2gpu_before.sqlite" in screen and "2 device(s)" in screen
    tmux("send-keys", "-t", "tui", "k")
    screen = tmux.wait_for("kernel name(s)", "flash_fwd_kernel")
    tmux("send-keys", "-t", "tui", "Enter")
    tmux.wait_for("execution(s)", "FlashAttnFun")  # the NVTX context; the column may be cut by a scrollbar
    tmux("send-keys", "-t", "tui", "Escape")  # alone: ESC followed by a key would read as Alt+key
    tmux.wait_for("kernel name(s)")
    tmux("send-keys", "-t", "tui", "t")
    tmux.wait_for("gpu0 all", "Longest idle gaps")
    tmux("send-keys", "-t", "tui", "q")
    deadline = time.monotonic() + 20
    while "Overview" in tmux.screen() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "Overview" not in tmux.screen(), "q did not quit the app"


def test_advisor_tui_fills_the_terminal(tmux: Tmux) -> None:
    """At 160x48 the app draws 160 columns and 48 rows (it drew 80x24 while it measured /dev/null), and it
    follows a resize."""
    root = Path(__file__).resolve().parents[2]
    trace = root / "fixtures/nsys/IO001_pageable_memcpy_baseline/IO001_pageable_memcpy_baseline.sqlite.gz"
    cmd = f"{sys.executable} -m advisor tui {trace}; sleep 30"
    env = ["-e", f"ADVISOR_CACHE_DIR={os.environ['ADVISOR_CACHE_DIR']}", "-e", "TERM=xterm-256color"]
    tmux("new-session", "-d", "-s", "tui", "-x", "160", "-y", "48", *env, cmd)
    screen = tmux.wait_for("Verdict", "o Overview")
    lines = screen.rstrip("\n").split("\n")
    assert max(len(line.rstrip()) for line in lines) > 100, screen
    title = next(line for line in lines if "IO001_pageable_memcpy_baseline" in line)
    assert title.index("advisor") > 40, "the header is centred on 160 columns (at 80 it starts near column 14)"
    assert "o Overview" in lines[47] if len(lines) >= 48 else False, f"footer not on row 48 of {len(lines)}"
    tmux("resize-window", "-t", "tui", "-x", "120", "-y", "40", check=False)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        rows = tmux.screen().rstrip("\n").split("\n")
        if len(rows) >= 40 and "o Overview" in rows[39] and max(len(r.rstrip()) for r in rows) <= 120:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"no redraw at 120x40:\n{tmux.screen()}")
    tmux("send-keys", "-t", "tui", "q")


def test_advisor_tui_with_ncu_in_tmux(tmux: Tmux) -> None:
    """`advisor tui TRACE --ncu REPORT` from the command line: matched kernels carry the ncu class, and the
    Roofline screen plots the report (our ME006 H100 capture: nsys timeline + ncu CSV of one `vadd` launch)."""
    root = Path(__file__).resolve().parents[2]
    trace = root / "fixtures/nsys/ME006_grid_too_small_baseline/ME006_grid_too_small_baseline.sqlite.gz"
    report = root / "fixtures/ncu/ME006_grid_too_small_baseline/ME006_grid_too_small_baseline.raw.csv.gz"
    cmd = f"{sys.executable} -m advisor tui {trace} --ncu {report}; sleep 30"
    env = ["-e", f"ADVISOR_CACHE_DIR={os.environ['ADVISOR_CACHE_DIR']}", "-e", "TERM=xterm-256color"]
    tmux("new-session", "-d", "-s", "tui", "-x", "120", "-y", "30", *env, cmd)
    tmux.wait_for("Verdict", "o Overview")
    tmux("send-keys", "-t", "tui", "k")
    # the header wraps where the terminal's width says (120 columns: "ncu class" ends a line, "from" starts the next)
    screen = tmux.wait_for("kernel name(s)", "ncu class", "(1 of 1 profiled launch(es) matched)")
    vadd = next(line for line in screen.splitlines() if line.lstrip().startswith("vadd("))
    assert vadd.split()[-1] == "latency", vadd
    tmux("send-keys", "-t", "tui", "l")
    tmux.wait_for("fp32 66.8 TFLOP/s", "Roofline (Nsight Compute counters)", "op/byte (DRAM)")
    tmux("send-keys", "-t", "tui", "q")
