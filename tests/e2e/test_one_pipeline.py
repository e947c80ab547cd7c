"""One pipeline: `diff --format html` and `tui BASE NEW` run each rule exactly once per side.

Before advisor.api, each side's rules ran twice: once for the diff's findings (diff/rulefacts.py)
and once more for the side's analysis (the HTML report's collect, the TUI's analyze_run).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from advisor.cli.main import main
from advisor.engine import findings
from advisor.model.store import Run
from advisor.rules.registry import all_rules
from tests.conftest import ROOT

PAIR = ROOT / "fixtures" / "kineto"
BASE = PAIR / "IO001_pageable_memcpy_torch_baseline" / "IO001_pageable_memcpy_torch_baseline.json.gz"
NEW = PAIR / "IO001_pageable_memcpy_torch_optimized" / "IO001_pageable_memcpy_torch_optimized.json.gz"


@pytest.fixture
def executions(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, str]]:
    """(rule code, input sha256) -> how many times the rule ran on that input."""
    seen: Counter[tuple[str, str]] = Counter()
    real = findings._run_one

    def counting(rule: Any, run: Run, *args: Any, **kwargs: Any) -> Any:
        seen[(rule.code, str(run.info.get("source_sha256")))] += 1
        return real(rule, run, *args, **kwargs)

    monkeypatch.setattr(findings, "_run_one", counting)
    return seen


def assert_once_per_side(seen: Counter[tuple[str, str]]) -> None:
    sides = {sha for _, sha in seen}
    assert len(sides) == 2, sides
    assert set(seen.values()) == {1}, [k for k, n in seen.items() if n != 1]
    assert len(seen) == 2 * len(all_rules())  # every rule, on each side


def test_diff_html_runs_each_rule_once_per_side(executions: Counter[tuple[str, str]], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "diff.html"
    assert main(["diff", str(BASE), str(NEW), "--format", "html", "-o", str(out)]) == 0, capsys.readouterr().err
    assert "IO001" in out.read_text()  # the baseline's pageable-memcpy finding is on the page
    assert_once_per_side(executions)


def test_tui_base_new_runs_each_rule_once_per_side(executions: Counter[tuple[str, str]]) -> None:
    from advisor.tui.app import AdvisorApp
    from tests.tui.helpers import wait_loaded

    app = AdvisorApp([str(BASE), str(NEW)])

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_loaded(app, pilot)
            assert app.current_mode == "diff"
            assert app.session is not None and app.session.diff is not None
            resolved = app.session.diff["findings"]["resolved"]
            assert "IO001" in {f["code"] for f in resolved}

    asyncio.run(run())
    assert_once_per_side(executions)
