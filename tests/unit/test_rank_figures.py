"""The HTML report's rank view (reports/rank_figures.py, templates/_ranks.html) on the real 8-rank DLRM capture:
each heat map cell is the rank's ProfilerStep time on the GPU side / matched wait read from the JSON directly; the
straggler and the fastest rank are named; a one-rank trace has no rank view; trace text stays escaped."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from advisor.api import open_run
from advisor.engine.report_data import collect
from advisor.reports.html import render_run_html
from advisor.reports.rank_figures import PALETTE, fill, rank_figures
from advisor.reports.units import fmt_ns
from tests import realkit
from tests.conftest import REAL

DLRM = REAL / "param" / "dlrm_8rank"


def _json(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(gzip.decompress(path.read_bytes()))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def html() -> str:
    if not DLRM.is_dir():
        pytest.skip("shared real fixtures absent")
    return render_run_html(collect(open_run(DLRM)))


def test_step_cells_are_the_profiler_steps(html: str) -> None:
    section = html[html.index('<section id="ranks">'):]
    section = section[: section.index("</section>")]
    tips = dict(re.findall(r"<title>rank (\d+), step 1: ([^<]+)</title>", section[: section.index("fig-ranks-wait")]))
    want = {}
    for f in sorted(DLRM.glob("*.json.gz")):
        doc = _json(f)
        ((*_, start, end),) = realkit.gpu_side_steps(doc["traceEvents"])  # ranks 1 and 3 start after warm-up kernels
        want[str(doc["distributedInfo"]["rank"])] = fmt_ns(end - start)
    assert tips == want and len(want) == 8
    assert "Straggler: rank 7;" in section and "Fastest (waits most): rank 1." in section
    assert 'data-cells="8"' in section and "rank 7 (straggler)" in section


def test_wait_cells_and_timeline_bars(html: str) -> None:
    view = collect(open_run(DLRM)).ranks
    assert view is not None
    figs = rank_figures(view)
    assert figs is not None
    _, wait = figs.maps
    assert [c.tip for c in wait.cells] == [f"rank {r}, step 1: {fmt_ns(w[0])}" for r, w in
                                           zip(view["ranks"], view["wait_ns"], strict=True)]
    top = max(w[0] for w in view["wait_ns"])
    assert [c.fill for c in wait.cells] == [fill(w[0], top) for w in view["wait_ns"]]
    assert wait.cells[1].fill == PALETTE[-1]  # rank 1 waits most
    n = len(view["timeline"]["straggler"]) + len(view["timeline"]["fastest"])
    assert n <= len(figs.bars) <= 2 * n  # a wait and a transfer bar per collective, no wait bar where none
    assert f'data-bars="{len(figs.bars)}"' in html


def test_one_rank_has_no_rank_view() -> None:
    f = next(DLRM.glob("worker0_*.json.gz"), None)
    if f is None:
        pytest.skip("shared real fixtures absent")
    inputs = collect(open_run(f))
    assert inputs.ranks is not None and not inputs.ranks["available"]
    assert rank_figures(inputs.ranks) is None and '<section id="ranks">' not in render_run_html(inputs)
