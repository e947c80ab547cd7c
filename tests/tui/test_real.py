"""The app over real traces, opened through its loading worker exactly as `advisor tui PATH` does."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, Static, Tree

from advisor.tui.app import AdvisorApp
from tests.conftest import real_path
from tests.tui.helpers import screen_text, settle

pytestmark = pytest.mark.real

NSYS = "nsys-ai/mfu_2gpu_before.sqlite"
NCU = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"


async def wait_loaded(app: AdvisorApp, pilot: Any, timeout_s: float = 120.0) -> None:
    waited = 0.0
    while app.session is None and app.error is None and waited < timeout_s:
        await pilot.pause(0.1)
        waited += 0.1
    assert app.error is None, app.error
    assert app.session is not None, "the run did not open in time"
    await settle(app, pilot)


def run_app(path: str, size: tuple[int, int], script: Any) -> None:
    import asyncio

    app = AdvisorApp([str(real_path(path))])

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await wait_loaded(app, pilot)
            await script(app, pilot)

    asyncio.run(main())


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
        assert len(app.screen.query_one("#ranges", Tree).root.children) > 0
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
        points = app.screen.query_one("#roofline-points", DataTable)
        assert points.row_count == 3
        assert [str(points.get_row_at(i)[2]) for i in range(3)] == ["latency"] * 3
        assert "Roofline (Nsight Compute)" in screen_text(app)
        await pilot.press("k")
        await settle(app, pilot)
        assert "from Nsight Compute" in str(app.screen.query_one("#kernels-info", Static).render())

    run_app(NCU, (80, 24), script)


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
