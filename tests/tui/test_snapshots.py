"""SVG snapshots of a few screens (synthetic run, fixed sizes), compared with the committed files.

Regenerate after an intended change with `ADVISOR_UPDATE_SNAPSHOTS=1 python -m pytest tests/tui/test_snapshots.py`
and review the SVGs (open them in a browser) before committing.
"""

from __future__ import annotations

import difflib
import html
import os
import re
from pathlib import Path
from typing import Any

import pytest

from advisor.tui.app import AdvisorApp
from advisor.tui.session import Session
from tests.tui.helpers import drive, settle

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("ADVISOR_UPDATE_SNAPSHOTS") == "1"


def normalize(svg: str) -> str:
    """Drop the random id Rich puts in every class name of an exported SVG."""
    return re.sub(r"\bterminal-\d+-", "terminal-", svg)


def svg_lines(svg: str) -> list[str]:
    """The text an exported SVG shows, one string per terminal line (to say how two snapshots differ)."""
    rows: dict[float, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)</text>', svg):
        rows.setdefault(float(m.group(2)), []).append((float(m.group(1)), html.unescape(m.group(3))))
    return ["".join(t for _, t in sorted(parts)).replace("\xa0", " ").rstrip() for _, parts in sorted(rows.items())]


def check(name: str, svg: str) -> None:
    path = SNAPSHOTS / f"{name}.svg"
    svg = normalize(svg)
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(svg)
        return
    assert path.exists(), f"no snapshot {path.name}: run ADVISOR_UPDATE_SNAPSHOTS=1 pytest {__file__}"
    want = path.read_text()
    if svg != want:
        text = "\n".join(difflib.unified_diff(svg_lines(want), svg_lines(svg), "snapshot", "drawn now", lineterm=""))
        pytest.fail(
            f"{path.name} differs from what the app draws now; if the change is intended, regenerate with "
            f"ADVISOR_UPDATE_SNAPSHOTS=1 python -m pytest tests/tui/test_snapshots.py and review the SVG.\n"
            f"Text on screen, snapshot vs now:\n{text or '(same text; styles or layout differ)'}",
            pytrace=False,
        )


@pytest.mark.parametrize(
    ("name", "keys", "size"),
    [
        ("overview_80x24", [], (80, 24)),
        ("kernels_200x50", ["k"], (200, 50)),
        ("timeline_100x30", ["t"], (100, 30)),
        ("roofline_100x30", ["l"], (100, 30)),
    ],
)
def test_snapshot(name: str, keys: list[str], size: tuple[int, int], full: Session) -> None:
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        for key in keys:
            await pilot.press(key)
            await settle(app, pilot)
        check(name, app.export_screenshot(title=name))

    drive(app, size, script)
