"""Pilot tests: every screen driven by keys over a synthetic run, asserting what it shows."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, Input, Markdown, Static, Tree

from advisor.tui.app import AdvisorApp
from advisor.tui.screens.finding import FindingScreen
from advisor.tui.screens.kernel import KernelScreen
from advisor.tui.session import Session
from advisor.tui.widgets.busy_strips import BusyStrips
from tests.tui.helpers import GEMM, MARKUP_NAMES, NCCL, drive, screen_text, settle, shown_text, synthetic_session

SIZES = [(80, 24), (200, 50)]


def cell_texts(table: DataTable[Any], column: int) -> list[str]:
    return [str(table.get_row_at(r)[column]) for r in range(table.row_count)]


def static_text(app: AdvisorApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


@pytest.mark.parametrize("size", SIZES)
def test_overview_shows_verdict_first_fix_and_device_bars(size: tuple[int, int], full: Session) -> None:
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        assert app.current_mode == "overview"
        verdict = static_text(app, "#verdict")
        assert "launch: the GPU waits on the host: launch gaps between short kernels" in verdict
        assert "shares of the device span of device 0:" in verdict and "idle_launch: 20.1%" in verdict
        first = static_text(app, "#first-fix")
        assert "LA001 small-kernel-storm" in first and "expected gain 6 ms" in first
        assert "[bold]evil_kernel[/]" in first  # the finding message is shown literally
        assert "Capture the step in a CUDA graph" in first
        text = screen_text(app)
        assert "device 0 (rank 0)" in text and "compute" in text and "idle" in text

    drive(app, size, script)


def test_findings_list_and_detail(full: Session) -> None:
    size = (80, 24)
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("f")
        await settle(app, pilot)
        table = app.screen.query_one("#findings", DataTable)
        assert cell_texts(table, 2) == ["LA001", "SY002"]
        assert cell_texts(table, 1) == ["6 ms", "2 ms"]
        table.focus()
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, FindingScreen)
        head = static_text(app, "#finding-head")
        assert "expected gain 6 ms" in head and "launch overhead x count" in head
        evidence = app.screen.query_one("#evidence", DataTable)
        assert [str(c) for c in evidence.get_row_at(0)] == ["launches", "3", "count", "[red"]
        fixes = static_text(app, "#fixes")
        assert "risk: safe" in fixes and "risk: changes-numerics" in fixes
        doc = app.screen.query_one("#rule-doc", Markdown)  # the rule's documentation, rendered as Markdown
        assert doc.source.startswith("# LA001 ") and "## Why it costs time" in doc.source
        assert doc.query("MarkdownH2")  # headings are drawn as headings, not as '## ' text
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen.query_one("#findings", DataTable)

    drive(app, size, script)


def test_findings_empty_says_so(bare: Session) -> None:
    app = AdvisorApp(session=bare)

    async def script(pilot: Any) -> None:
        assert "No verdict" in static_text(app, "#verdict")
        await pilot.press("f")
        await settle(app, pilot)
        assert "No findings" in static_text(app, "#findings-info")
        assert app.screen.query_one("#findings", DataTable).row_count == 0

    drive(app, (80, 24), script)


@pytest.mark.parametrize("size", SIZES)
def test_kernels_sort_filter_and_instances(size: tuple[int, int], full: Session) -> None:
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("k")
        await settle(app, pilot)
        table = app.screen.query_one("#kernels", DataTable)
        assert table.row_count == 5
        assert cell_texts(table, 2)[0] == "18 ms"  # sorted by total, largest first
        assert "5 kernel name(s)" in static_text(app, "#kernels-info")
        await pilot.press("s")  # next sort key: count
        await settle(app, pilot)
        assert "sorted by count" in static_text(app, "#kernels-info")
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"sgemm")
        await pilot.press("enter")
        await settle(app, pilot)
        assert table.row_count == 1
        assert str(table.get_row_at(0)[0]).startswith("ampere_sgemm")
        assert str(table.get_row_at(0)[6]) == "compute"  # ncu class, joined by name
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, KernelScreen)
        inst = app.screen.query_one("#instances", DataTable)
        assert inst.row_count == 3
        row = [str(c) for c in inst.get_row_at(0)]
        assert row[1] == "2 ms" and row[4] == "128x1x1"
        assert row[6] == "[b]train_step[/b] > forward" or row[6] == "[b]train_step[/b] > backward"
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen.query_one("#kernels", DataTable)

    drive(app, size, script)


def test_kernel_header_click_sorts_by_that_column(full: Session) -> None:
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("k")
        await settle(app, pilot)
        await pilot.click("#kernels", offset=(2, 0))  # the "name" header
        await settle(app, pilot)
        assert "sorted by name asc" in static_text(app, "#kernels-info")
        names = cell_texts(app.screen.query_one("#kernels", DataTable), 0)
        assert names[0] == "[bold]evil_kernel[/]"

    drive(app, (200, 50), script)


@pytest.mark.parametrize("size", SIZES)
def test_timeline_strips_gaps_and_zoom(size: tuple[int, int], full: Session) -> None:
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("t")
        await settle(app, pilot)
        strips = app.screen.query_one("#strips", BusyStrips)
        assert strips.data is not None
        labels = [(r["device_id"], r["stream_id"]) for r in strips.data["rows"]]
        assert labels == [(0, None), (0, 7), (0, 8), (1, None), (1, 7)]
        text = screen_text(app)
        assert "gpu0 all" in text and "gpu1 all" in text
        gaps = app.screen.query_one("#gaps", DataTable)
        # each gap's cause is the one the verdict and the rules give it (metric idle_claims), read here with
        # plain SQL over the claims of the gaps the table shows (longest first, the whole gap inside the window)
        claims = full.run.sql_rows("SELECT cause FROM m_idle_claims ORDER BY end_ns - start_ns DESC, device_id, "
                                   f"start_ns LIMIT {gaps.row_count}")
        assert gaps.row_count > 0 and cell_texts(gaps, 3) == [c for (c,) in claims]
        assert "sync" in cell_texts(gaps, 3)
        before = static_text(app, "#timeline-info")
        assert "(83.5 ms of 83.5 ms)" in before
        await pilot.press("plus")
        await settle(app, pilot)
        assert "(41.8 ms of 83.5 ms)" in static_text(app, "#timeline-info")
        await pilot.press("right_square_bracket")
        await settle(app, pilot)
        assert static_text(app, "#timeline-info") != before
        await pilot.press("0")
        await settle(app, pilot)
        assert static_text(app, "#timeline-info") == before
        gaps.focus()
        await pilot.press("enter")  # zoom to the longest gap
        await settle(app, pilot)
        assert "(43.5 ms of 83.5 ms)" in static_text(app, "#timeline-info")

    drive(app, size, script)


def test_ranges_tree(full: Session) -> None:
    size = (200, 50)
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("r")
        await settle(app, pilot)
        tree = app.screen.query_one("#ranges", Tree)
        top = tree.root.children
        assert len(top) == 1 and str(top[0].label).startswith("[b]train_step[/b]")
        assert str(top[0].label).endswith("  launch")  # the per-range verdict's class, in the tree
        detail = static_text(app, "#range-detail")
        assert detail.startswith("[b]train_step[/b]\n") and "verdict: launch: [red GPU idle" in detail
        await pilot.press("enter")  # expand
        await settle(app, pilot)
        labels = {str(c.label).split("  ")[0]: str(c.label) for c in top[0].children}
        assert sorted(labels) == ["backward", "forward"]
        assert labels["forward"].endswith("  compute") and not labels["backward"].endswith(("compute", "launch"))
        details = {}
        for _ in range(2):  # both children, whichever order the tree lists them in
            await pilot.press("down")
            await settle(app, pilot)
            detail = static_text(app, "#range-detail")
            assert detail.startswith("[b]train_step[/b] > ") and "1 instance(s)" in detail
            details[detail.split("\n")[0].rsplit(" > ", 1)[1]] = detail
        assert "verdict: compute: math-bound kernels dominate" in details["forward"]
        assert "(all 1 ranges of this name, 40 ms; confidence high)" in details["forward"]
        assert "verdict: n/a" in details["backward"]

    drive(app, size, script)


def test_roofline_with_ncu(full: Session) -> None:
    size = (80, 24)
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("l")
        await settle(app, pilot)
        info = static_text(app, "#roofline-info")
        assert "2 profiled kernel launch(es) · peak DRAM 1.92 TB/s · fp32 25.3 TFLOP/s" in info
        assert "basis: Nsight Compute counters" in info
        assert "kernel(s) 2: no counted work, so no roofline point; see SM % / mem %." in info
        points = app.screen.query_one("#roofline-points", DataTable)
        assert cell_texts(points, 2) == ["compute", "latency"]
        assert cell_texts(points, 3) == ["fp32", "-"]
        assert cell_texts(points, 6) == ["6", "-"]
        assert cell_texts(points, 7) == ["6 TFLOP/s", "n/a"]
        # 6 TFLOP/s at 6 op/byte: of the attainable roof min(25.3 TFLOP/s FP32, 6 op/byte x 1.92 TB/s), the share
        # the speed-of-light classes judge (it read 23.7% of the flat FP32 peak before)
        assert cell_texts(points, 8) == ["52.1%", "-"]
        text = screen_text(app)
        assert "Roofline (Nsight Compute counters)" in text and "FP32" in text and "op/s" in text

    drive(app, size, script)


def test_roofline_not_available_without_ncu(bare: Session) -> None:
    app = AdvisorApp(session=bare)

    async def script(pilot: Any) -> None:
        await pilot.press("l")
        await settle(app, pilot)
        info = static_text(app, "#roofline-info")
        assert "Roofline not available" in info and "ncu --set full" in info

    drive(app, (80, 24), script)


@pytest.mark.parametrize("size", SIZES)
def test_diff_screen(size: tuple[int, int], diff: Session) -> None:
    app = AdvisorApp(session=diff)

    async def script(pilot: Any) -> None:
        assert app.current_mode == "diff"  # BASE NEW opens on the diff
        summary = static_text(app, "#diff-summary")
        assert "base.sqlite  →  synthetic.sqlite" in summary and "regression" in summary
        table = app.screen.query_one("#diff-kernels", DataTable)
        first = [str(c) for c in table.get_row_at(0)]
        assert first[0] == "slower" and first[5].startswith(GEMM[:12]) and first[1].startswith("+")
        assert "Findings" in screen_text(app) or size[1] < 30
        await pilot.press("k")
        await settle(app, pilot)
        assert app.current_mode == "kernels"
        await pilot.press("d")
        await settle(app, pilot)
        assert app.current_mode == "diff"

    drive(app, size, script)


def test_diff_key_is_off_for_one_run(full: Session) -> None:
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("d")
        await settle(app, pilot)
        assert app.current_mode == "overview"
        assert "Diff" not in screen_text(app).splitlines()[-1]

    drive(app, (200, 50), script)


def test_screens_switch_by_key_at_80x24(full: Session) -> None:
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        for key, mode in (("f", "findings"), ("k", "kernels"), ("t", "timeline"), ("r", "ranges"),
                          ("l", "roofline"), ("o", "overview")):
            await pilot.press(key)
            await settle(app, pilot)
            assert app.current_mode == mode
            assert "Overview" in screen_text(app).splitlines()[-1]  # the footer lists the bindings

    drive(app, (80, 24), script)


def test_footer_fits_80_columns_and_help_lists_the_keys(full: Session) -> None:
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        footer = screen_text(app).splitlines()[-1]
        for label in ("Overview", "Roofline", "Help", "Quit"):  # first, late and last keys all visible
            assert label in footer, footer
        await pilot.press("question_mark")
        await settle(app, pilot)
        assert app.screen.query("HelpPanel"), "? opens the key panel"
        text = screen_text(app)
        assert "Findings" in text and "Timeline" in text
        await pilot.press("question_mark")
        await settle(app, pilot)
        assert not app.screen.query("HelpPanel"), "? again closes it"

    drive(app, (80, 24), script)


def test_nccl_and_long_names_are_clipped_not_lost(full: Session) -> None:
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("k")
        await settle(app, pilot)
        table = app.screen.query_one("#kernels", DataTable)
        names = cell_texts(table, 0)
        assert any(n.startswith("ncclDevKernel_All") for n in names)
        assert all(len(n) <= 80 - 58 for n in names)
        nccl_row = next(i for i, n in enumerate(names) if n.startswith("ncclDev"))
        table.move_cursor(row=nccl_row)
        await settle(app, pilot)
        assert static_text(app, "#kernel-full") == NCCL  # the full name of the highlighted row

    drive(app, (80, 24), script)


def test_markup_names_do_not_crash_any_screen(full: Session) -> None:
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("k")
        await settle(app, pilot)
        names = cell_texts(app.screen.query_one("#kernels", DataTable), 0)
        assert set(MARKUP_NAMES) <= set(names)
        shown = await shown_text(app, pilot, "[bold]evil_kernel[/]", "[red", "[link=https://example.invalid]")
        assert "[bold]evil_kernel[/]" in shown and "[red" in shown
        assert "[link=https://example.invalid]" in shown
        table = app.screen.query_one("#kernels", DataTable)
        table.move_cursor(row=names.index("[red"))
        await pilot.press("enter")
        await settle(app, pilot)
        assert static_text(app, "#kernel-name") == "[red"
        for key in ("escape", "t", "r", "l", "f", "o"):
            await pilot.press(key)
            await settle(app, pilot)
        assert "[bold]evil_kernel[/]" in screen_text(app)

    drive(app, (200, 50), script)


def test_base_new_toggle_switches_the_shown_run() -> None:
    """`tui BASE NEW`: key b shows BASE on every screen but Diff (the overview's run line and findings follow),
    the subtitle says which run is shown, and b again returns to NEW."""
    session = synthetic_session(diff=True)
    app = AdvisorApp(session=session)

    async def script(pilot: Any) -> None:
        await settle(app, pilot)
        await pilot.press("o")
        await settle(app, pilot)
        assert "showing NEW" in app.sub_title
        new_line, new_fix = static_text(app, "#run-line"), static_text(app, "#first-fix")
        await pilot.press("b")
        await settle(app, pilot)
        assert app.current_mode == "overview" and "showing BASE" in app.sub_title
        base_span = session.base.analysis.summary.capture.span_ns if session.base else None
        assert base_span is not None and base_span != session.new.analysis.summary.capture.span_ns
        line = static_text(app, "#run-line")
        assert line != new_line and f"{base_span / 1e6:.1f} ms" in line
        assert static_text(app, "#first-fix") != new_fix  # the base run has no findings of its own
        await pilot.press("d")
        await settle(app, pilot)
        assert app.screen.query_one("#diff-summary", Static)  # the comparison itself is unchanged
        await pilot.press("b", "o")
        await settle(app, pilot)
        assert static_text(app, "#run-line") == new_line and "showing NEW" in app.sub_title

    drive(app, (120, 40), script)
