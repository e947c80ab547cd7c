"""The README's commands are executed (issue 21): the quick start, one example per command, the Python API.

Why: a README that drifts from the tool is the first thing a newcomer trips on. Each `advisor ...` line
of its bash blocks runs here from the repository root, with `-o` redirected into a temporary folder;
the install and test-suite commands are checked for the files and the script they name (running pip
or the whole suite inside the suite would be circular), and the TUI line runs in tmux in tests/tui.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from advisor.cli.main import command_modules, main

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def _commands() -> list[str]:
    lines = [line.strip() for block in _blocks("bash") for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _advisor_lines() -> list[str]:
    out = []
    for line in _commands():
        for part in line.split("&&"):
            if part.strip().startswith("advisor"):
                out.append(part.strip())
    return out


def test_quick_start_is_two_commands_that_name_real_things() -> None:
    quick = README.split("## Quick start", 1)[1].split("## Commands", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", quick, re.S)
    assert [b.strip().count("\n") for b in blocks] == [0, 0], "exactly two one-line commands"
    install, suite = (b.strip() for b in blocks)
    assert install.startswith("python3 -m pip install . && advisor analyze fixtures/")
    assert suite == "bash scripts/test-setup.sh && python3 -m pytest -n 2"
    assert (ROOT / "scripts/test-setup.sh").is_file()
    assert suite in (ROOT / ".ci/run").read_text(), ".ci/run runs the README's test command verbatim"
    assert "python3 -m venv .venv && . .venv/bin/activate" in quick, "the PEP 668 line"


def test_every_command_has_a_readme_example() -> None:
    shown = {shlex.split(line)[1] for line in _advisor_lines()}
    assert {m.NAME for m in command_modules()} <= shown


INTERACTIVE = ("advisor tui", "advisor mcp")  # covered by tests/tui and tests/e2e/test_mcp.py


@pytest.mark.parametrize("line", [x for x in _advisor_lines() if not x.startswith(INTERACTIVE)])
def test_readme_command_runs(line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    argv = shlex.split(line)[1:]
    argv = [str(tmp_path / a) if prev == "-o" else a for prev, a in zip(["", *argv], argv, strict=False)]
    for a in argv:
        if a.startswith("fixtures/"):
            assert (ROOT / a).is_file(), a
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 0, (line, err)
    assert out.strip() or "wrote " in err
    if argv[0] == "analyze" and "-o" not in argv:
        assert "do this first" in out and "IO001" in out


def test_python_api_example(capsys: pytest.CaptureFixture[str]) -> None:
    """The one-line API example compiles; where advisor.api exists (docs/python-api.md) it runs and
    agrees with the CLI's JSON."""
    (snippet,) = (b.strip() for b in _blocks("python"))
    code = compile(snippet, "README.md", "exec")
    assert "advisor.analyze(" in snippet and "docs/python-api.md" in README
    import importlib.util

    if importlib.util.find_spec("advisor.api") is None:
        return  # the API lands separately (advisor/api.py); the snippet is checked to compile
    cwd = os.getcwd()
    os.chdir(ROOT)  # the snippet's path is relative to the repository root
    try:
        scope: dict[str, object] = {}
        exec(code, scope)
    finally:
        os.chdir(cwd)
    path = re.search(r'analyze\("([^"]+)"\)', snippet)
    assert path is not None
    assert main(["analyze", str(ROOT / path.group(1)), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    a = scope["a"]
    assert len(a.findings) == len(doc["findings"])  # type: ignore[attr-defined]
