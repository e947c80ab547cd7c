"""CP003's evidence against an independent read of the raw Nsight Compute CSV (csv module only).

The rule reads the model (parsers/ncu_csv.py -> ncu_metrics -> advisor.perf.ncu_read); this test
reads the exported CSV itself, so a unit or name slip in either path shows up as a mismatch.
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest

from advisor.engine.findings import run_rules
from advisor.ingest import open_run
from tests.rules.casekit import REPO

BASE = REPO / "fixtures/ncu/CP003_warp_divergence_baseline/CP003_warp_divergence_baseline.raw.csv.gz"


def _csv_row() -> dict[str, str]:
    with gzip.open(BASE, "rt", newline="") as f:
        rows = list(csv.reader(f))
    header, _units, first = rows[0], rows[1], rows[2]
    return dict(zip(header, first, strict=True))


def test_cp003_evidence_matches_the_csv(tmp_path: Path) -> None:
    raw = _csv_row()
    threads = float(raw["smsp__thread_inst_executed_per_inst_executed.ratio"])
    pred_on = float(raw["smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"])
    sm = float(raw["sm__throughput.avg.pct_of_peak_sustained_elapsed"])
    duration_ns = float(raw["gpu__time_duration.sum"]) * 1000  # exported in us
    run = open_run(BASE, cache_dir=tmp_path)
    (finding,) = run_rules(run, select={"CP003"}, strict=True).findings
    assert finding.value("threads_per_inst_executed") == pytest.approx(threads, abs=0.005)
    assert finding.value("threads_per_inst_pred_on") == pytest.approx(pred_on, abs=0.005)
    assert finding.value("divergent_branch_targets") == int(
        float(raw["smsp__sass_branch_targets_threads_divergent.sum"])
    )
    assert finding.value("uniform_branch_pct") == pytest.approx(
        float(raw["smsp__sass_average_branch_targets_threads_uniform.pct"]), abs=0.005
    )
    assert finding.value("kernel_time") == pytest.approx(duration_ns)
    own = duration_ns * (1 - min(threads, pred_on) / 32) * sm / 100
    assert finding.est_gain_ns == pytest.approx(own, rel=1e-3)
