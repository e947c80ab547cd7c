"""Architecture promises: layer contracts hold, and the core loads no UI library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

UI = ("textual", "rich", "plotly", "jinja2", "plotext")


def test_import_advisor_loads_no_ui_library() -> None:
    code = (
        "import sys, advisor, advisor.api, advisor.ingest, advisor.engine.summary; advisor.analyze, advisor.diff;"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {UI!r}); print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"UI modules imported by the core: {out.stdout}"


def test_layer_contracts_hold() -> None:
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_layers.py")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert ", 0 violations" in res.stdout


def test_layer_checker_catches_a_violation(tmp_path: Path) -> None:
    """The checker is not vacuous: an upward import in a core module is reported."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import check_layers
    finally:
        sys.path.pop(0)
    bad = tmp_path / "bad.py"
    bad.write_text("from advisor.cli.main import main\nimport rich\n")
    assert "advisor.cli.main" in check_layers.imports("advisor.model.bad", bad)
    assert check_layers.layer_of("advisor.cli.main", ["advisor.cli", "advisor.model"]) == 0


def test_mypy_strict_passes() -> None:
    """`mypy --strict` over the package as installed (scripts/typecheck.py maps parsers/ etc.)."""
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "typecheck.py")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


def test_surfaces_import_the_core_only_through_advisor_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CLI module importing advisor.engine (not advisor.api) is a violation; through advisor.api it is not."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import check_layers
    finally:
        sys.path.pop(0)
    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_text("from advisor.engine.analyze import analyze_run\nfrom advisor.diff import open_side\n")
    good.write_text("from advisor.api import analyze_run, open_side\nfrom advisor.errors import InputError\n")
    monkeypatch.setattr(check_layers, "modules", lambda: {"advisor.cli.bad": bad, "advisor.tui.good": good})
    found = check_layers.check()
    assert found == [
        "advisor.cli.bad -> advisor.diff (a surface imports the core only through advisor.api)",
        "advisor.cli.bad -> advisor.diff.open_side (a surface imports the core only through advisor.api)",
        "advisor.cli.bad -> advisor.engine.analyze (a surface imports the core only through advisor.api)",
        "advisor.cli.bad -> advisor.engine.analyze.analyze_run (a surface imports the core only through advisor.api)",
    ]
