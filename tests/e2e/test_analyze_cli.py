"""`advisor analyze` end to end on real traces: formats, the JSON contract, denominators, cache reuse."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor.cli.main import main
from tests.conftest import real_path

NSYS = "nsys-ai/mfu_2gpu_before.sqlite"
KINETO = "hta/nccl_parser_config__nccl_data.json.gz"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def _pcts(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every dict in the document that carries a percentage."""
    found = []
    if isinstance(node, dict):
        if any(k == "pct" or k.endswith("_pct") for k in node):
            found.append((path, node))
        for k, v in node.items():
            found += _pcts(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _pcts(v, f"{path}[{i}]")
    return found


@pytest.mark.parametrize("rel", [NSYS, KINETO])
def test_json_contract_and_denominators(rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(["analyze", str(real_path(rel)), "--format", "json"], capsys)
    assert rc == 0
    doc = json.loads(out)
    assert doc["schema_version"] == "1.0"
    for key in ("inputs", "devices", "counts", "time", "findings", "verdict"):
        assert key in doc
    assert {"path", "format", "tool", "tool_version"} <= set(doc["inputs"][0])
    assert {"kernels", "memcpy", "memset", "api_calls", "ranges"} <= set(doc["counts"])
    carriers = _pcts(doc)
    assert carriers, "no percentages at all?"
    for where, node in carriers:
        for key in [k for k in node if k == "pct" or k.endswith("_pct")]:
            named = node.get("of") or node.get("denominator") if key == "pct" else node.get(f"{key}_of")
            assert named, f"percentage {key} without its denominator at {where}: {node}"


def test_nsys_numbers_match_sqlite(capsys: pytest.CaptureFixture[str]) -> None:
    path = real_path(NSYS)
    rc, out, _ = _run(["analyze", str(path), "--format", "json"], capsys)
    doc = json.loads(out)
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    n, total = con.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    per_dev = dict(con.execute("SELECT deviceId, min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1").fetchall())
    assert doc["counts"]["kernels"] == n
    assert doc["top_kernels"]["total_kernel_ns"] == total
    assert sorted(d["device_id"] for d in doc["time"]) == sorted(per_dev)
    for d in doc["time"]:
        assert d["busy"]["ns"] + d["idle"]["ns"] == d["span_ns"]
        assert 0 < d["kernels"]["ns"] <= d["busy"]["ns"]


def test_text_percentages_name_their_denominator(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(["analyze", str(real_path(KINETO))], capsys)
    assert rc == 0
    header = ""
    for line in out.splitlines():
        if not line.startswith(" "):
            header = line
        if re.search(r"\d%", line):
            assert "percent of" in header or "% of" in line or "percent of" in line or "(of " in line, (header, line)


def test_markdown_is_bounded_and_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(["analyze", str(real_path(NSYS)), "--format", "md"], capsys)
    assert rc == 0 and len(out) < 65_536
    assert "<script" not in out.lower()


def test_warm_cache_reuses_the_entry(tmp_path: Path) -> None:
    env = {"ADVISOR_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "advisor", "analyze", str(real_path(KINETO)), "--format", "json"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    entries = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert len(entries) == 1
    mtime = (entries[0] / "meta.json").stat().st_mtime_ns
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    assert (entries[0] / "meta.json").stat().st_mtime_ns == mtime
    assert json.loads(first.stdout)["counts"] == json.loads(second.stdout)["counts"]


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    res = subprocess.run([sys.executable, "-m", "advisor", "analyze", str(bad)], capture_output=True, text=True,
                         env={"ADVISOR_CACHE_DIR": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "broken.json.gz" in res.stderr and "Traceback" not in res.stderr
