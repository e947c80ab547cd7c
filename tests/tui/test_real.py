"""The app over real traces, opened through its loading worker exactly as `advisor tui PATH` does."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, Static, Tree

from advisor.tui.app import AdvisorApp
from tests.conftest import real_path
from tests.tui.helpers import run_paths, screen_text, settle, wait_loaded

pytestmark = pytest.mark.real

NSYS = "nsys-ai/mfu_2gpu_before.sqlite"
NSYS_AFTER = "nsys-ai/mfu_2gpu_after.sqlite"
NCU = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"


def run_app(path: str, size: tuple[int, int], script: Any) -> None:
    run_paths([str(real_path(path))], size, script)


def test_nsys_run_every_screen() -> None:
    async def script(app: AdvisorApp, pilot: Any) -> None:
        assert app.current_mode == "overview"
        assert "2 device(s)" in str(app.screen.query_one("#run-line", Static).render())
        assert "device 1" in screen_text(app)
        await pilot.press("k")
        await settle(app, pilot)
        kernels = app.screen.query_one("#kernels", DataTable)
        assert str(kernels.get_row_at(0)[0]).startswith("void flash::flash_fwd_kernel")
        assert str(kernels.get_row_at(0)[1]) == "68"
        await pilot.press("enter")
        await settle(app, pilot)
        instances = app.screen.query_one("#instances", DataTable)
        assert instances.row_count == 68
        assert "FlashAttnFunc" in str(instances.get_row_at(0)[6])  # NVTX context via the launch's correlation id
        await pilot.press("escape", "t")
        await settle(app, pilot)
        assert "gpu0 all" in screen_text(app) and "gpu1 all" in screen_text(app)
        assert app.screen.query_one("#gaps", DataTable).row_count == 20
        await pilot.press("r")
        await settle(app, pilot)
        top = app.screen.query_one("#ranges", Tree).root.children
        assert len(top) > 0
        # the classifier's per-range verdicts (analyze's verdict.ranges) reach the tree and the detail line
        assert app.session is not None
        verdict = app.session.analysis.verdict
        named = {r.name: r.verdict.class_ for r in verdict.ranges} if verdict is not None else {}
        assert named, "no per-range verdicts on this run"
        tagged = [n for n in top if str(n.label).split("  ")[0] in named]
        assert tagged and all(str(n.label).endswith("  " + named[str(n.label).split("  ")[0]]) for n in tagged)
        detail = str(app.screen.query_one("#range-detail", Static).render())
        first = str(top[0].label).split("  ")[0]
        if first in named:
            assert f"verdict: {named[first]}: " in detail
        await pilot.press("l")
        await settle(app, pilot)
        assert "Roofline not available" in str(app.screen.query_one("#roofline-info", Static).render())
        await pilot.press("f")
        await settle(app, pilot)
        assert app.screen.query_one("#findings", DataTable) is not None

    run_app(NSYS, (100, 30), script)


def test_ncu_report_roofline_and_kernels() -> None:
    async def script(app: AdvisorApp, pilot: Any) -> None:
        await pilot.press("l")
        await settle(app, pilot)
        # the CUTLASS int8 GEMMs on the INT8 tensor roof (no FP work: before, they had no roofline point)
        info = str(app.screen.query_one("#roofline-info", Static).render())
        assert "3 profiled kernel launch(es) · peak DRAM 1.93 TB/s · int8_tc 460 Top/s" in info
        assert "no counted work" not in info
        points = app.screen.query_one("#roofline-points", DataTable)
        rows = [[str(c) for c in points.get_row_at(i)] for i in range(points.row_count)]
        assert [r[2] for r in rows] == ["latency"] * 3
        assert [r[3] for r in rows] == ["int8_tc"] * 3
        assert [r[7] for r in rows] == ["81.1 Top/s", "83.3 Top/s", "69.7 Top/s"]
        # op/s over each launch's attainable roof (its own INT8 tensor peak at its clocks, the roof the classifier
        # judges: latency, < 60%); over the figure's one INT8 roof they read 17.6%, 18.1%, 15.2%
        assert [r[8] for r in rows] == ["17.8%", "18.1%", "15.0%"]
        text = screen_text(app)
        assert "Roofline (Nsight Compute counters)" in text and "INT8 tensor" in text and "DRAM" in text
        assert "op/s" in text and "op/byte (DRAM)" in text
        await pilot.press("k")
        await settle(app, pilot)
        assert "from Nsight Compute" in str(app.screen.query_one("#kernels-info", Static).render())

    run_app(NCU, (80, 24), script)


def test_base_new_opens_on_the_diff() -> None:
    """`advisor tui BASE NEW` on the nsys-ai pair: the Diff screen shows the diff engine's verdict and kernels."""
    import asyncio

    app = AdvisorApp([str(real_path(NSYS)), str(real_path(NSYS_AFTER))])

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_loaded(app, pilot)
            assert app.current_mode == "diff"
            summary = str(app.screen.query_one("#diff-summary", Static).render())
            assert "mfu_2gpu_before.sqlite  →  mfu_2gpu_after.sqlite" in summary
            assert "regression: GPU time per unit of work +13.1%" in summary
            first = [str(c) for c in app.screen.query_one("#diff-kernels", DataTable).get_row_at(0)]
            assert first[0] == "slower" and first[5].startswith("ncclDevKernel_Send")  # clipped to 20 columns at 80x24
            await pilot.press("k")  # the other screens show the NEW run
            await settle(app, pilot)
            assert "mfu_2gpu_after" in str(app.sub_title)

    asyncio.run(main())


def test_missing_input_shows_the_error() -> None:
    import asyncio

    app = AdvisorApp(["/nonexistent/trace.sqlite"])

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(50):
                await pilot.pause(0.05)
                if app.error:
                    break
            assert app.error is not None and "no such file" in app.error
            assert "Could not open the input" in screen_text(app)

    asyncio.run(main())


def test_overview_run_facts_equal_the_cli_text() -> None:
    """Kernel families, copies and host API calls: the overview prints the lines `advisor analyze` prints."""
    import subprocess
    import sys

    cli = subprocess.run([sys.executable, "-m", "advisor", "analyze", str(real_path(NSYS))], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    start = cli.index(next(x for x in cli if x.startswith("Kernel time by family")))
    end = cli.index(next(x for x in cli if x.startswith("Findings")))
    want = [x.strip() for x in cli[start:end]]
    assert len(want) >= 10

    async def script(app: AdvisorApp, pilot: Any) -> None:
        shown = [x.strip() for x in str(app.screen.query_one("#facts", Static).render()).splitlines()]
        assert shown == want
        assert "device 0: attention 50.2%, elementwise 15.5%, copy 15.2%, gemm 10.6%, comm 6.3%, reduce 2.2%" in shown

    run_app(NSYS, (160, 60), script)
