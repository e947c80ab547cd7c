"""Packaging: the distribution name every hint names, and one install that gives every command and format.

Why: PyPI's `advisor` is an unrelated 2018 hyper-parameter tuner, so a hint `pip install advisor[...]`
installs the wrong project; and an extra needed for `tui` or `.ncu-rep` made a default install lack
surfaces the README promises (issue 21).
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import advisor

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(reqs: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def test_distribution_name_is_the_one_hints_name() -> None:
    assert PYPROJECT["name"] == advisor.DISTRIBUTION == "gpu-advisor"
    assert advisor.INSTALL_HINT == "pip install gpu-advisor"
    assert PYPROJECT["scripts"]["advisor"] == "advisor.cli.main:console_main"


def test_every_command_and_format_is_a_core_dependency() -> None:
    core = _names(PYPROJECT["dependencies"])
    assert {"textual", "plotext", "ncu-report", "jinja2", "plotly", "duckdb"} <= core
    extras = PYPROJECT["optional-dependencies"]
    assert set(extras) <= {"test", "dev", "distributed", "dask"}, "extras are for tests, dev and the distributed engine"
    for name, reqs in extras.items():
        assert not (_names(reqs) & {"textual", "plotext", "ncu-report"}), f"extra {name} holds a core dependency"


def test_installed_metadata_matches_pyproject() -> None:
    """The environment the tests run in was installed from this pyproject under the new name."""
    dist = metadata.distribution("gpu-advisor")
    assert dist.version == advisor.__version__
    required = _names([r for r in dist.requires or [] if "extra ==" not in r])
    assert {"textual", "plotext", "ncu-report"} <= required


def test_no_hint_names_the_wrong_project() -> None:
    """No source or doc tells a user to install `advisor` or `advisor[...]` (the other project)."""
    bad = re.compile(r"pip install +['\"]?advisor(\[|['\"\s]|$)")
    files = [p for d in ("advisor", "parsers", "reports", "rules", "scripts", "docs") for p in (ROOT / d).rglob("*")
             if p.suffix in {".py", ".md", ".sh", ".toml", ".tcss", ".html"}] + [ROOT / "README.md"]
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in files for i, line in enumerate(p.read_text().splitlines(), 1)
            if bad.search(line) and "Do not" not in line and "not `pip install advisor`" not in line]
    assert not hits, hits
