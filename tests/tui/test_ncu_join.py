"""`advisor tui TRACE --ncu REPORT`: the report is joined to the trace as `advisor analyze TRACE --ncu REPORT` does.

ME006 baseline (our H100 capture): nsys timeline of 16 `vadd` launches plus 2 fill kernels, and an ncu
CSV that profiled one `vadd` launch (latency bound: 16 blocks for 132 SMs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from advisor.cli.main import main
from advisor.tui.app import AdvisorApp
from tests.tui.helpers import run_paths, settle

ROOT = Path(__file__).resolve().parents[2]
NSYS = ROOT / "fixtures/nsys/ME006_grid_too_small_baseline/ME006_grid_too_small_baseline.sqlite.gz"
NCU_CSV = ROOT / "fixtures/ncu/ME006_grid_too_small_baseline/ME006_grid_too_small_baseline.raw.csv.gz"


def kernel_rows(app: AdvisorApp) -> dict[str, list[str]]:
    table = app.screen.query_one("#kernels", DataTable)
    out = {}
    for i in range(table.row_count):
        row = [str(c) for c in table.get_row_at(i)]
        out[row[0].split("(")[0]] = row
    return out


def test_kernels_show_the_ncu_class_of_matched_kernels() -> None:
    async def script(app: AdvisorApp, pilot: Any) -> None:
        assert app.session is not None and app.session.ncu_run is not None
        sec = app.session.analysis.sections.ncu  # the same join section `analyze --ncu` writes
        assert sec is not None and (sec.profiled_launches, sec.matched) == (1, 1)
        await pilot.press("k")
        await settle(app, pilot)
        info = str(app.screen.query_one("#kernels-info", Static).render())
        assert f"ncu class from {NCU_CSV.name} (1 of 1 profiled launch(es) matched)" in info
        rows = kernel_rows(app)
        assert rows["vadd"][1] == "16" and rows["vadd"][6] == "latency"  # every timeline launch of the matched kernel
        assert rows["refwl::fill_kernel"][6] == "-"  # not profiled
        await pilot.press("f")
        await settle(app, pilot)
        findings = app.screen.query_one("#findings", DataTable)
        assert str(findings.get_row_at(0)[2]) == "ME006"  # the ncu rule, weighed by the timeline's 16 launches
        await pilot.press("l")
        await settle(app, pilot)
        roofline = str(app.screen.query_one("#roofline-info", Static).render())
        assert roofline.startswith("1 profiled kernel launch(es) · peak DRAM 3.35 TB/s · fp32 66.8 TFLOP/s")
        assert f"(the --ncu report {NCU_CSV.name})" in roofline

    run_paths([str(NSYS)], (100, 30), script, ncu=str(NCU_CSV))


def test_without_ncu_the_class_is_empty() -> None:
    async def script(app: AdvisorApp, pilot: Any) -> None:
        await pilot.press("k")
        await settle(app, pilot)
        assert "ncu class from" not in str(app.screen.query_one("#kernels-info", Static).render())
        assert kernel_rows(app)["vadd"][6] == "-"

    run_paths([str(NSYS)], (100, 30), script)


def test_ncu_with_two_paths_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tui", str(NSYS), str(NSYS), "--ncu", str(NCU_CSV)]) == 2
    err = capsys.readouterr().err
    assert "--ncu joins one Nsight Compute report to one timeline trace" in err
    assert "Traceback" not in err
