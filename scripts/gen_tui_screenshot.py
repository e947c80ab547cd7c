#!/usr/bin/env python3
"""Write docs/tui-screenshot.svg: `advisor tui` on a bundled trace (Overview, 120x36), for the README.

Why a script: the picture comes from the app itself (Textual's SVG export through its test pilot), so it
can be redrawn whenever the screens change: `python scripts/gen_tui_screenshot.py`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "tui-screenshot.svg"
TRACE = ROOT / "fixtures/nsys/IO001_pageable_memcpy_baseline/IO001_pageable_memcpy_baseline.sqlite.gz"


async def _shoot() -> str:
    from advisor.tui.app import AdvisorApp

    app = AdvisorApp([str(TRACE)])
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(1200):  # the loading worker opens the trace (seconds when cold)
            if app.session is not None or app.error is not None:
                break
            await pilot.pause(0.1)
        if app.error is not None:
            raise SystemExit(f"cannot open {TRACE}: {app.error}")
        for _ in range(20):
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
        return str(app.export_screenshot(title="advisor tui"))


def main() -> int:
    with tempfile.TemporaryDirectory() as cache:
        os.environ.setdefault("ADVISOR_CACHE_DIR", cache)
        svg = asyncio.run(_shoot())
    OUT.write_text(svg)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
