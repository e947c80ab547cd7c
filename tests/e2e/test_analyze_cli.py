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
    assert doc["schema_version"] == "1.6"
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


def test_gpu_metric_range_verdicts_in_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An nsys export with GPU metrics samples (no real capture records them): read by the nsys parser,
    classified per NVTX range by advisor.perf, shown by analyze as JSON, text and Markdown."""
    from tests.unit.test_perf_timeline import nsys_export_with_gpu_metrics

    trace = str(nsys_export_with_gpu_metrics(tmp_path / "metrics.sqlite"))
    rc, out, _ = _run(["analyze", trace, "--format", "json"], capsys)
    assert rc == 0
    sec = json.loads(out)["runs"][0]["gpu_metrics"]
    assert (sec["confidence"], sec["ranges_total"], sec["missing"]) == ("low", 2, None)
    got = {it["range"]: it for it in sec["items"]}
    assert [it["range"] for it in sec["items"]] == ["copy", "gemm"]  # 95 us each: by name then
    copy, gemm = got["copy"], got["gemm"]
    assert (copy["samples"], copy["instances"], copy["total_ns"], copy["device_id"]) == (10, 1, 95_000, 0)
    assert (copy["sm_active_pct"], copy["dram_pct"], copy["tensor_pct"], copy["compute_pct"]) == (90.0, 85.0, 0.0, 20.0)
    assert (gemm["sm_active_pct"], gemm["dram_pct"], gemm["tensor_pct"], gemm["compute_pct"]) == (
        99.0, 12.0, 85.0, 85.0)
    assert (copy["class"], copy["rule"], gemm["class"], gemm["rule"]) == (
        "memory", "gpu_metrics_memory", "compute", "gpu_metrics_compute")
    for where, node in _pcts(sec):
        for key in [k for k in node if k.endswith("_pct")]:
            assert node.get(f"{key}_of"), f"percentage {key} without its denominator at {where}: {node}"

    rc, out, _ = _run(["analyze", trace], capsys)
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("GPU metrics per NVTX range"))
    assert "% of the device's peak" in lines[head] and "confidence low" in lines[head]
    assert lines[head + 2].split() == ["90.0%", "85.0%", "0.0%", "memory", "10", "95.0", "us", "copy", "(device", "0)"]
    assert lines[head + 3].split()[:4] == ["99.0%", "12.0%", "85.0%", "compute"]

    rc, out, _ = _run(["analyze", trace, "--format", "md"], capsys)
    assert "<details><summary>GPU metrics per NVTX range (sampled, confidence low)</summary>" in out
    assert "| copy | 0 | 90.0% | 85.0% | 0.0% | memory | 10 |" in out
    assert "| gemm | 0 | 99.0% | 12.0% | 85.0% | compute | 10 |" in out
    assert out.count("<details>") == out.count("</details>")


def test_no_gpu_metrics_key_without_samples(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(["analyze", str(real_path(KINETO)), "--format", "json"], capsys)
    assert rc == 0 and "gpu_metrics" not in json.loads(out)["runs"][0]


def test_progress_is_drawn_on_stderr_only_when_asked(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`--progress` draws reading (per decoded Kineto slice) and analysis (per rule) on stderr, never on
    stdout; without it, a stderr that is not a terminal (as here) stays empty."""
    from advisor.cli import progress
    from advisor.parsers import limits
    from advisor.parsers.kineto import decode

    monkeypatch.setattr(progress, "DELAY_S", 0.0)  # the bar waits 1 s: draw at once,
    monkeypatch.setattr(progress, "REDRAW_S", 0.0)  # and every report
    monkeypatch.setattr(decode, "CHUNK_BYTES", 256 << 10)  # many slices from a small trace
    monkeypatch.setattr(limits, "CHUNK", 256 << 10)
    path = str(real_path(KINETO))
    rc, out, err = _run(["analyze", path, "--format", "json", "--no-cache", "--progress"], capsys)
    assert rc == 0
    json.loads(out)  # stdout is the document alone
    assert "\r" not in out and "[#" not in out
    lines = err.replace("\r", "\n").splitlines()
    reading = [line for line in lines if line.startswith(f"reading {path}: [") and "kineto nccl_parser_config" in line]
    assert len(reading) >= 5, err  # per slice, not once per file
    assert any(line.startswith(f"reading {path}: done in ") for line in lines)
    assert any(line.startswith(f"analyzing {path}: [") and "rule LA001" in line for line in lines), err
    assert any(line.startswith(f"analyzing {path}: done in ") for line in lines)
    assert err.endswith("\n")
    rc, out, err = _run(["analyze", path, "--format", "json"], capsys)
    assert rc == 0 and err == ""


def test_kineto_reports_progress_per_slice_in_bytes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A plain and a gzip'd Kineto file each report many increasing fractions of their text (the .gz
    through its size trailer), ending at 1: the bar moves while the slices are decoded."""
    import gzip

    from advisor.ingest import open_run
    from advisor.parsers import limits
    from advisor.parsers.base import ParseOptions
    from advisor.parsers.kineto import decode

    for module, name in ((decode, "CHUNK_BYTES"), (decode, "READ_BYTES"), (limits, "CHUNK")):
        monkeypatch.setattr(module, name, 256 << 10)  # a slice is at least one read block (4 MiB)
    gz = real_path(KINETO)
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    for path in (gz, plain):
        seen: list[tuple[float, float, str]] = []

        def record(done: float, total: float, what: str, seen: list[tuple[float, float, str]] = seen) -> None:
            seen.append((done, total, what))

        run = open_run(path, ParseOptions(progress=record), use_cache=False)
        run.close()
        fractions = [d / t for d, t, _ in seen]
        assert len(fractions) >= 10 and fractions == sorted(fractions), fractions
        assert fractions[0] == 0 and fractions[-2] < 1 <= fractions[-1] == 1
        assert all(w == f"kineto {path.name}" for _, _, w in seen)


def test_per_rule_progress_gives_the_report_one_run_rules_call_gives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """analyze_run reports a step per rule (run_rules' before_each hook); its findings, order and
    outcomes equal a plain run_rules call's."""
    from advisor.engine.analyze import analyze_run
    from advisor.engine.findings import run_rules
    from advisor.ingest import open_run

    run = open_run(real_path("hta/df_index_resolver__df_index_resolver.json.gz"))
    try:
        steps: list[tuple[float, float, str]] = []
        doc = analyze_run(run, progress=lambda d, t, w: steps.append((d, t, w))).to_dict()
        whole = run_rules(run).to_dict()
    finally:
        run.close()
    assert doc["findings"], "pick a trace where rules fire"
    assert [f["fingerprint"] for f in doc["findings"]] == [f["fingerprint"] for f in whole["findings"]]
    assert doc["headline"] == whole["headline"]
    assert [(r["code"], r["outcome"]) for r in doc["rules"]] == [(r["code"], r["outcome"]) for r in whole["rules"]]
    total = steps[0][1]
    assert [d for d, _, _ in steps] == sorted(d for d, _, _ in steps) and steps[-1][:2] == (total, total)
    assert sum(w.startswith("rule ") for _, _, w in steps) == len(doc["rules"])
