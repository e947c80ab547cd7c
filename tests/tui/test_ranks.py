"""Ranks screen (key n): the ranks x steps heat maps of step time and wait for peers, and the collectives of the
straggler against the fastest rank, on the real 8-rank DLRM capture and a generated run with an injected
straggler. Values are checked against an independent read of the rank files (plain JSON)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from advisor.api import open_run, rank_view
from advisor.tui.app import AdvisorApp
from advisor.tui.widgets.rank_heatmap import SHADES, bars, heatmap, shade
from tests.conftest import REAL
from tests.tui.helpers import run_paths, screen_text, settle

ROOT = Path(__file__).resolve().parents[2]
DLRM = REAL / "param" / "dlrm_8rank"


def _comm_kernels(path: Path) -> tuple[int, list[tuple[float, float]]]:
    """(rank, [(ts, dur) of its NCCL kernels]) read from the JSON itself."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    ks = sorted((float(e["ts"]), float(e["dur"])) for e in doc["traceEvents"]
                if e.get("cat") == "kernel" and "nccl" in str(e.get("name", "")).lower())
    return int(doc["distributedInfo"]["rank"]), ks


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tpl = next(DLRM.glob("worker0_*.json.gz"), None)
    if tpl is None:
        pytest.skip("shared real fixtures absent")
    spec = importlib.util.spec_from_file_location("bench_ranks_tui", ROOT / "benchmarks" / "ranks.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    sys.modules["bench_ranks_tui"] = gen
    spec.loader.exec_module(gen)
    out = tmp_path_factory.mktemp("ranks")
    gen.generate(tpl, out, gen.Spec(4, {1: 2000.0}, offset_us=1000.0, jitter_us=10.0, seed=3))
    return out


def test_view_on_dlrm_8rank_matches_the_json() -> None:
    """Every rank's wait in the heat map is its NCCL kernels' time beyond each instance's shortest kernel (the
    n-th kernel of every rank is one instance: no process group recorded), read from the JSON directly."""
    if not DLRM.is_dir():
        pytest.skip("shared real fixtures absent")
    per = dict(_comm_kernels(f) for f in sorted(DLRM.glob("*.json.gz")))
    n = min(len(k) for k in per.values())
    transfer = [min(per[r][i][1] for r in per) for i in range(n)]
    want = {r: round(sum(per[r][i][1] - transfer[i] for i in range(n)) * 1000) for r in per}
    view = rank_view(open_run(DLRM))
    assert view["available"] and view["ranks"] == list(range(8)) and view["steps"] == [1]
    assert {r: row[0] for r, row in zip(view["ranks"], view["wait_ns"], strict=True)} == want
    assert view["fastest"] == max(want, key=lambda r: want[r])  # waits most: arrives first
    slow = view["timeline"]["straggler"]
    assert len(slow) == n and sum(c["wait_ns"] for c in slow) == want[view["straggler"]]
    assert all(c["end_ns"] - c["start_ns"] >= c["wait_ns"] for c in slow)


def test_view_names_the_injected_straggler(generated: Path) -> None:
    """Rank 1 arrives 2 ms late at every collective: it waits least, the others about 2 ms a collective more;
    on the aligned clock every instance ends together on both ranks (offsets removed)."""
    view = rank_view(open_run(generated))
    assert view["straggler"] == 1
    waits = dict(zip(view["ranks"], (row[0] for row in view["wait_ns"]), strict=True))
    assert waits[1] == 0 and min(w for r, w in waits.items() if r != 1) > 8 * 1_900_000
    tl = view["timeline"]
    ends = {c["seq"]: c["end_ns"] for c in tl["straggler"]}
    assert all(abs(c["end_ns"] - ends[c["seq"]]) <= 1000 for c in tl["fastest"])  # within the template's 1 us
    assert all(c["last_arrival"] for c in tl["straggler"])


def test_drawings() -> None:
    """Shades by share of the largest value; a missing step is a dot; wait then transfer in a bar."""
    assert shade(None, 10) is None and shade(0, 10) == SHADES[0] and shade(10, 10) == SHADES[-1]
    view = {"ranks": [0, 1], "straggler": 1, "fastest": 0, "wait_ns": [[4_000_000, None], [0, 0]]}
    a, b = heatmap(view, "wait_ns")
    assert a.plain.startswith("rank 0 fastest") and "·" in a.plain and a.plain.endswith("4.000 ms")
    assert b.plain.startswith("rank 1 straggler") and b.plain.endswith("0.000 ms")
    line = bars([{"start_ns": 0, "end_ns": 100, "wait_ns": 50}], 0, 100, 10)
    assert line.plain == "░░░░░█████"


def test_screen_shows_the_maps_and_the_timeline(generated: Path) -> None:
    async def script(app: AdvisorApp, pilot: Any) -> None:
        await pilot.press("n")
        await settle(app, pilot)
        info = str(app.screen.query_one("#ranks-info", Static).render())
        assert info.startswith("straggler: rank 1 (its late arrivals cost the others ")
        assert "fastest: rank " in info and "4 ranks x 1 step(s)" in info
        text = screen_text(app)
        assert "Step time per rank and step" in text and "Wait for peers per rank and step" in text
        assert "rank 1 straggler" in text and "░" in text and "█" in text

    run_paths([str(generated)], (120, 50), script)
