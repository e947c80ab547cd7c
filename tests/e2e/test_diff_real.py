"""`advisor diff` on real trace pairs; key numbers are checked against independent reads of the files
(sqlite3 on the nsys exports, json/gzip on the Kineto traces), not against advisor's own model."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from advisor.cli.main import main
from advisor.diff import SideOptions, diff_paths
from tests import realkit
from tests.conftest import real_path

pytestmark = pytest.mark.real

MFU_BEFORE, MFU_AFTER = "nsys-ai/mfu_2gpu_before.sqlite", "nsys-ai/mfu_2gpu_after.sqlite"
HTA_CONTROL, HTA_TEST = "hta/trace_diff__control__control.json.gz", "hta/trace_diff__test__test.json.gz"
DLRM = "param/dlrm_8rank"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["diff", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


# ---- independent reads ---------------------------------------------------------------------------


def sqlite_kernels(path: Path) -> dict[str, tuple[int, int]]:
    """shortName -> (count, total ns), straight from CUPTI_ACTIVITY_KIND_KERNEL."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT s.value, count(*), sum(k.[end] - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.shortName GROUP BY 1"
    ).fetchall()
    con.close()
    return {name: (n, ns) for name, n, ns in rows}


def sqlite_gpu_window(path: Path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    lo, hi = con.execute(
        "SELECT min(s), max(e) FROM (SELECT start s, [end] e FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL "
        "SELECT start, [end] FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL "
        "SELECT start, [end] FROM CUPTI_ACTIVITY_KIND_MEMSET)"
    ).fetchone()
    con.close()
    return int(hi - lo)


def kineto_events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path) as f:
        events: list[dict[str, Any]] = json.load(f)["traceEvents"]
    return events


# ---- nsys-ai mfu pair: same kernels, fewer layers per 300 ms window, slower all-to-all -------------


@pytest.fixture(scope="module")
def mfu() -> dict[str, Any]:
    return diff_paths(str(real_path(MFU_BEFORE)), str(real_path(MFU_AFTER)), top=50)


def test_mfu_work_ratio_matches_launch_counts(mfu: dict[str, Any]) -> None:
    before, after = sqlite_kernels(real_path(MFU_BEFORE)), sqlite_kernels(real_path(MFU_AFTER))
    flash = after["flash_fwd_kernel"][0] / before["flash_fwd_kernel"][0]  # 60 / 68: 15 vs 17 layers per window
    assert flash == pytest.approx(60 / 68)
    assert mfu["alignment"]["work"]["basis"] == "kernel-counts"
    assert mfu["alignment"]["work"]["ratio"] == pytest.approx(flash, abs=0.01)
    # the derived exports record no rank or device index: the caveat says so (not that they differ)
    assert mfu["alignment"]["devices_by"] == "order"
    assert any(c.startswith("devices paired by order (neither side records ranks or device indices)")
               for c in mfu["caveats"]), mfu["caveats"]


def test_mfu_is_a_regression_per_unit_of_work(mfu: dict[str, Any]) -> None:
    """Raw kernel time in the window fell (fewer layers fit), but time per unit of work rose ~13%."""
    before, after = sqlite_kernels(real_path(MFU_BEFORE)), sqlite_kernels(real_path(MFU_AFTER))
    assert sum(ns for _, ns in after.values()) < sum(ns for _, ns in before.values())  # the naive reading
    wb, wa = sqlite_gpu_window(real_path(MFU_BEFORE)), sqlite_gpu_window(real_path(MFU_AFTER))
    ratio = after["flash_fwd_kernel"][0] / before["flash_fwd_kernel"][0]
    expected_pct = 100.0 * (wa / ratio - wb) / wb
    m = mfu["metric"]
    assert mfu["verdict"]["verdict"] == "regression"
    assert m["delta"]["pct"] == pytest.approx(expected_pct, abs=1.0)
    assert 10.0 < m["delta"]["pct"] < 16.0
    assert "base GPU time" in m["delta"]["of"]


def test_mfu_names_the_all_to_all_slowdown(mfu: dict[str, Any]) -> None:
    before, after = sqlite_kernels(real_path(MFU_BEFORE)), sqlite_kernels(real_path(MFU_AFTER))
    top = mfu["kernels"]["items"][0]
    assert top["key"] == "ncclDevKernel_SendRecv"
    (nb, tb), (na, ta) = before["ncclDevKernel_SendRecv"], after["ncclDevKernel_SendRecv"]
    assert (top["base"]["count"], top["base"]["total_ns"]) == (nb, tb)
    mean_pct = 100.0 * (ta / na - tb / nb) / (tb / nb)
    assert top["mean_delta"]["pct"] == pytest.approx(mean_pct, abs=0.1)  # +41%: 385 -> 544 us per call
    flash = next(r for r in mfu["kernels"]["items"] if r["key"].startswith("flash::flash_fwd_kernel"))
    assert abs(flash["mean_delta"]["pct"]) < 1.0  # the compute kernels did not change
    assert mfu["kernels"]["new_count"] == mfu["kernels"]["gone_count"] == 0
    assert "ncclDevKernel_SendRecv" in mfu["verdict"]["headline"]


def test_mfu_gate_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    b, a = str(real_path(MFU_BEFORE)), str(real_path(MFU_AFTER))
    assert cli(capsys, b, a, "--fail-on-regression", "5", "--no-rules")[0] == 1
    assert cli(capsys, b, a, "--fail-on-regression", "20", "--no-rules")[0] == 0
    assert cli(capsys, b, a, "--no-rules")[0] == 0  # no gate, no failure
    assert cli(capsys, a, b, "--fail-on-regression", "5", "--no-rules")[0] == 0  # reversed: an improvement


def test_mfu_formats(capsys: pytest.CaptureFixture[str]) -> None:
    b, a = str(real_path(MFU_BEFORE)), str(real_path(MFU_AFTER))
    rc, out, _ = cli(capsys, b, a, "--format", "json", "--fail-on-regression", "5")
    doc = json.loads(out)
    assert rc == 1 and doc["gate"]["failed"] and doc["verdict"]["verdict"] == "regression"
    rc, md, _ = cli(capsys, b, a, "--format", "md", "--top", "500", "--no-rules")
    assert rc == 0 and len(md) < 65_536 and "REGRESSION" in md and "ncclDevKernel_SendRecv" in md
    rc, text, _ = cli(capsys, b, a, "--no-rules")
    assert "VERDICT: REGRESSION" in text and "of base GPU time" in text


def test_html_format(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("jinja2")
    out = tmp_path / "diff.html"
    rc, _, err = cli(capsys, str(real_path(MFU_BEFORE)), str(real_path(MFU_AFTER)), "--format", "html", "-o", str(out))
    assert rc == 0, err
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html") or "<html" in page[:500]
    assert "ncclDevKernel_SendRecv" in page and "REGRESSION" in page


def test_html_shows_findings_per_side_and_what_changed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Our ME005 pair (unfused -> fused elementwise chain): the diff page lists each side's findings and the
    changed ones (CP002's naive/tiled SGEMMs no longer fire CP001: hand-written kernels are left to CP002/ncu)."""
    pytest.importorskip("jinja2")
    from advisor.reports.units import fmt_ns
    from tests.conftest import ROOT

    name = "ME005_unfused_elementwise_chain_{}"
    b, a = (str(ROOT / "fixtures" / "nsys" / name.format(v) / f"{name.format(v)}.sqlite.gz")
            for v in ("baseline", "optimized"))
    rc, out, _ = cli(capsys, b, a, "--format", "json")
    doc = json.loads(out)
    changed = [c for c in doc["findings"]["changed"] if c["code"] == "ME005"]
    assert len(changed) == 1  # the chain's fusable time shrank 4.3x, so did ME005's saving
    assert changed[0]["base_est_gain_ns"] > 4 * changed[0]["est_gain_ns"]
    page_path = tmp_path / "me005.html"
    rc, _, err = cli(capsys, b, a, "--format", "html", "-o", str(page_path))
    assert rc == 0, err
    page = page_path.read_text()
    section = page[page.index('id="finding-changes"'):page.index("</section>", page.index('id="finding-changes"'))]
    assert "<td>changed</td>" in section and "ME005" in section
    assert fmt_ns(changed[0]["base_est_gain_ns"]) in section and fmt_ns(changed[0]["est_gain_ns"]) in section
    assert page.count("findings</h2>") == 2  # Before: findings, After: findings


# ---- HTA trace_diff pair: A100 rank 3 of 8 vs V100 rank 1 of 2 -------------------------------------


@pytest.fixture(scope="module")
def hta() -> dict[str, Any]:
    return diff_paths(str(real_path(HTA_CONTROL)), str(real_path(HTA_TEST)), top=400)


def test_hta_pair_is_not_comparable(hta: dict[str, Any]) -> None:
    v = hta["verdict"]
    assert v["verdict"] == "inconclusive"
    assert v["reason"].startswith("not comparable: different GPUs")
    assert "A100" in v["reason"] and "V100" in v["reason"]
    assert any("world size: 8 ranks (base) vs 2" in c for c in hta["caveats"])
    assert any(c.startswith("devices paired by order (ranks/indices differ): base rank 3 with new rank 1")
               for c in hta["caveats"]), hta["caveats"]


def test_hta_step_times_match_the_json(hta: dict[str, Any]) -> None:
    def steps(rel: str) -> list[float]:  # each step until the last kernel it launched ends (the GPU side)
        return [end - start for *_, start, end in realkit.gpu_side_steps(list(kineto_events(real_path(rel))))]

    sb, sn = steps(HTA_CONTROL), steps(HTA_TEST)
    assert len(sb) == len(sn) == 6
    m = hta["metric"]
    assert m["base_ns"] == pytest.approx(statistics.fmean(sb), abs=1000)
    assert m["new_ns"] == pytest.approx(statistics.fmean(sn), abs=1000)
    assert m["ci"] is not None and m["samples"]["base"] == 6


def test_hta_names_the_device_to_device_copies(hta: dict[str, Any]) -> None:
    """The test arm issues Memcpy DtoD 4645 times in 6 steps against 18 in the control (aten::clone/copy_)."""

    def memcpy(rel: str) -> Counter[str]:
        return Counter(e["name"] for e in kineto_events(real_path(rel)) if e.get("cat") == "gpu_memcpy")

    cb, cn = memcpy(HTA_CONTROL)["Memcpy DtoD (Device -> Device)"], memcpy(HTA_TEST)["Memcpy DtoD (Device -> Device)"]
    assert (cb, cn) == (18, 4645)
    item = next(r for r in hta["kernels"]["items"] if r["kind"] == "memcpy" and "DtoD" in r["key"])
    assert item["base"]["count"] == pytest.approx(cb / 6) and item["new"]["count"] == pytest.approx(cn / 6, abs=1e-3)
    assert hta["kernels"]["items"][0] is item  # the largest change per step
    # the embedding kernels' template argument changed (2ul -> 5ul) and still match after normalization
    emb = [
        r for r in hta["kernels"]["items"] if r["key"].startswith("split_embedding_codegen_forward_unweighted_kernel")
    ]
    assert [r["status"] for r in emb] == ["changed"]
    # the GEMM libraries differ by GPU generation: volta_* only in test, ampere/cutlass_80 only in control
    assert any(r["key"].startswith("volta_sgemm") for r in hta["kernels"]["new"])
    assert any(r["key"].startswith(("ampere_", "cutlass_80")) for r in hta["kernels"]["gone"])


def test_hta_gate_does_not_fire_on_incomparable_sides(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(
        capsys, str(real_path(HTA_CONTROL)), str(real_path(HTA_TEST)), "--fail-on-regression", "5", "--no-rules"
    )
    assert rc == 0 and "not comparable" in out


# ---- A-vs-A -------------------------------------------------------------------------------------------


def test_same_file_twice_is_neutral(capsys: pytest.CaptureFixture[str]) -> None:
    p = str(real_path(HTA_CONTROL))
    rc, out, _ = cli(capsys, p, p, "--format", "json", "--fail-on-regression", "0")
    doc = json.loads(out)
    assert rc == 0 and doc["verdict"]["verdict"] == "neutral" and doc["metric"]["delta"]["ns"] == 0


def _rank_dir(tmp_path: Path, name: str, rank: int) -> Path:
    d = tmp_path / name
    d.mkdir()
    src = next(real_path(DLRM).glob(f"worker{rank}_*.json.gz"))
    shutil.copy(src, d / src.name)
    return d


def test_two_ranks_of_one_job_are_neutral(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a, b = _rank_dir(tmp_path, "a", 0), _rank_dir(tmp_path, "b", 1)
    rc, out, _ = cli(capsys, str(a), str(b), "--format", "json", "--fail-on-regression", "5")
    doc = json.loads(out)
    assert rc == 0
    assert doc["verdict"]["verdict"] == "neutral", doc["verdict"]
    assert "same capture session" in doc["verdict"]["reason"]
    assert doc["devices"][0]["base"]["rank"] == 0 and doc["devices"][0]["new"]["rank"] == 1


def test_directory_of_repeated_captures(tmp_path: Path) -> None:
    """Three copies of one rank's trace: auto-detected as repeated captures (same recorded rank)."""
    d = tmp_path / "caps"
    d.mkdir()
    src = next(real_path(DLRM).glob("worker0_*.json.gz"))
    for i in range(3):
        shutil.copy(src, d / f"capture{i}.json.gz")
    doc = diff_paths(str(d), str(d), SideOptions(with_rules=False))
    assert doc["base"]["layout"].startswith("3 repeated captures")
    assert doc["metric"]["samples"]["base"] == 3 and doc["metric"]["ci"] is not None
    assert doc["verdict"]["verdict"] == "neutral"


def test_directory_of_rank_files_is_one_run(tmp_path: Path) -> None:
    d = tmp_path / "ranks"
    d.mkdir()
    for f in sorted(real_path(DLRM).glob("worker[0-2]_*.json.gz")):
        shutil.copy(f, d / f.name)
    doc = diff_paths(str(d), str(d), SideOptions(with_rules=False))
    assert doc["base"]["layout"].startswith("one run of 3 rank files")
    assert doc["alignment"]["devices_by"] == "rank" and len(doc["devices"]) == 3


def test_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, out, err = cli(capsys, str(tmp_path / "missing.json"), str(real_path(HTA_CONTROL)))
    assert rc == 2 and err.count("\n") == 1 and "no such file" in err
    rc, out, err = cli(capsys, str(real_path(HTA_CONTROL)), str(real_path(HTA_CONTROL)), "--fail-on-regression", "-1")
    assert rc == 2
