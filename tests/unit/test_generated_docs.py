"""Generated docs are current: each names the script that regenerates it."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_model_docs_are_current() -> None:
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_model_docs.py"), "--check"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_agent_docs_are_current() -> None:
    """docs/agents.md's tool schemas are the server's (advisor/mcp/server.py signatures)."""
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_agent_docs.py"), "--check"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_cli_reference_is_current() -> None:
    """docs/cli.md is the parser's own --help text (scripts/gen_cli_docs.py)."""
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_cli_docs.py"), "--check"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
