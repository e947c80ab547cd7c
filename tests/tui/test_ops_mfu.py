"""Roofline screen's modelled ops and the MFU screen, on a real capture (CP004 composite training step, H100,
Kineto with record_shapes), opened through the loading worker as `advisor tui PATH` does.

Every value on screen is checked against the document `advisor analyze PATH --format json` writes for the same
trace (its `ops` and `mfu` sections), and the headline ones also as literal numbers.
"""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

from textual.widgets import DataTable, Static

from advisor.cli.main import main
from advisor.tui.app import AdvisorApp
from advisor.tui.format import fmt_pct, ns
from tests.tui.helpers import drive, run_paths, screen_text, settle

ROOT = Path(__file__).resolve().parents[2]
CP004 = ROOT / "fixtures/kineto/CP004_composite_training_step_baseline"


@functools.cache
def analyzed(path: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tui-ops-") as d:  # read back, then removed: nothing left behind
        out = Path(d) / "a.json"
        assert main(["analyze", str(path), "--format", "json", "-o", str(out)]) in (0, 1)
        run: dict[str, Any] = json.loads(out.read_text())["runs"][0]
    return run


def rows(app: AdvisorApp, table_id: str) -> list[list[str]]:
    table = app.screen.query_one(f"#{table_id}", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def test_roofline_lists_every_modelled_op_by_gpu_time() -> None:
    doc = analyzed(CP004)
    items = doc["ops"]["items"]
    total = sum(r["gpu_ns"] for r in items)

    async def script(app: AdvisorApp, pilot: Any) -> None:
        await pilot.press("l")
        await settle(app, pilot)
        info = str(app.screen.query_one("#roofline-info", Static).render())
        assert f"modelled ops A-{chr(64 + len(items))}: {len(items)} by GPU time" in info
        assert f"kernel time modelled: device 0 {fmt_pct(doc['ops']['coverage'][0]['modelled']['pct'])}" in info
        table = rows(app, "roofline-ops")
        assert len(table) == len(items) == doc["ops"]["items_total"]
        for i, (row, item) in enumerate(zip(table, items, strict=True)):
            assert row[0] == chr(65 + i)
            assert row[1] == ns(item["gpu_ns"])
            assert row[2] == fmt_pct(100.0 * item["gpu_ns"] / total)
            assert row[3:6] == [str(item["calls"]), item["bound"], "+".join(item["precision"])]
            assert row[7] == f"{item['tflops']:.3g}"
            assert row[8] == fmt_pct(item["attainable_pct"])
            assert row[9] == f"{item['name']} [{item['device_id']}]"
        # the two GEMM ops hold 91% of the modelled time: 52.1 and 51.2 TFLOP/s on the 67 TFLOP/s FP32 pipe
        assert table[0][:9] == ["A", "222 ms", "57.6%", "84", "compute", "fp32", "683", "52.1", "77.7%"]
        assert table[1][:9] == ["B", "129 ms", "33.5%", "48", "compute", "fp32", "683", "51.2", "76.4%"]
        text = screen_text(app)
        assert "A" in text and "B" in text and "FP32" in text  # lettered on the plot beside the kernel points
        assert [str(c.label) for c in app.screen.query_one("#roofline-ops", DataTable).columns.values()] == [
            "", "GPU time", "share", "calls", "bound", "precision", "op/byte", "TFLOP/s", "% attainable",
            "op [device]"]

    run_paths([str(CP004)], (130, 50), script)


def test_mfu_screen_shows_the_mfu_section() -> None:
    mfu = analyzed(CP004)["mfu"]

    async def script(app: AdvisorApp, pilot: Any) -> None:
        await pilot.press("u")
        await settle(app, pilot)
        info = str(app.screen.query_one("#mfu-info", Static).render())
        (peak,) = mfu["peaks"]
        assert f"device 0 fp32 {peak['peak_tflops']:g} TFLOP/s" in info and "67 TFLOP/s" in info
        steps = [s["mfu_pct"] for s in mfu["steps"]]
        assert f"device 0: {len(steps)} step(s), MFU median {fmt_pct(median(steps))}" in info
        assert "MFU median 68.8% (min 68.2%, max 68.8%)" in info
        (dev,) = rows(app, "mfu-devices")
        d = mfu["devices"][0]
        assert dev == ["device 0", ns(d["span_ns"]), f"{d['tflops']:.3g}", fmt_pct(d["mfu_pct"]),
                       fmt_pct(d["modelled_pct"])]
        assert dev == ["device 0", "395 ms", "46", "68.7%", "99.5%"]
        ranges = rows(app, "mfu-ranges")
        assert [r[0] for r in ranges] == [r["name"] for r in mfu["ranges"]]
        for row, r in zip(ranges, mfu["ranges"], strict=True):
            assert row[1:] == [str(r["count"]), ns(r["span_ns"]), f"{r['tflops']:.3g}", fmt_pct(r["mfu_pct"]),
                               fmt_pct(r["modelled_pct"])]
        step_rows = rows(app, "mfu-steps")
        assert [r[4] for r in step_rows] == [fmt_pct(s["mfu_pct"]) for s in mfu["steps"]]

    run_paths([str(CP004)], (110, 40), script)


def test_mfu_screen_says_why_without_shapes(full: Any) -> None:
    """The synthetic nsys run records no op shapes: the screen says what to capture, no table."""
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("u")
        await settle(app, pilot)
        assert "No MFU: no op with recorded shapes" in screen_text(app)
        assert not app.screen.query("#mfu-devices")


    drive(app, (100, 30), script)


def test_mfu_key_is_in_the_help_panel(full: Any) -> None:
    """`u` is off the 80-column footer; the key panel (?) lists it."""
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        assert "MFU" not in screen_text(app).splitlines()[-1]
        await pilot.press("question_mark")
        await settle(app, pilot)
        assert "MFU" in screen_text(app)

    drive(app, (100, 30), script)
