"""One finding per pattern across ranks (advisor.engine.ranks): the per-rank findings each rule returned are
merged by (rule, place without the device); checked against the rules' own outcomes on the real 8-rank DLRM
run, and a one-rank run is left alone."""

from __future__ import annotations

import re
from pathlib import Path

from advisor.engine.findings import run_rules
from advisor.engine.ranks import across_ranks, device_ranks
from advisor.ingest import open_run


def test_dlrm_findings_merge_per_rule_and_place(real: Path) -> None:
    run = open_run(real / "param" / "dlrm_8rank")
    ranks = device_ranks(run)
    assert sorted(ranks.values()) == list(range(8))
    report = run_rules(run)
    raw = [f for r in report.results for f in r.findings]  # what the rules returned, one per rank
    place = {id(f): (f.code, re.sub(r"(^|\|)device=\d+", "", f.location).lstrip("|")) for f in raw}
    groups: dict[tuple[str, str], list[int]] = {}
    for f in raw:
        if f.window.device_id in ranks and "device=" in f.location:
            groups.setdefault(place[id(f)], []).append(f.est_gain_ns)
    merged = [f for f in report.findings if f.location.startswith("ranks")]
    # each rule once per rank before, once per place after (no CO001: the ranks' exposed collectives are peer wait
    # or starved by their late hosts, metric comm_exposure, which overlap cannot hide; ID001 on 7 ranks: a rank's
    # step starts before its first GPU activity, and that idle is the step's)
    assert len(raw) == 43 and len(report.findings) == 9
    assert len(merged) == sum(1 for g in groups.values() if len(g) > 1)
    for f in merged:
        g = groups[(f.code, f.location.removeprefix("ranks").lstrip("|"))]
        assert f.est_gain_ns == max(g) and len(f.ranks) == len(g)
        worst = max(f.ranks, key=lambda r: r["est_gain_ns"])
        assert f.message.startswith(f"on {len(g)} of 8 ranks (worst: rank {worst['rank']})")


def test_one_rank_is_unchanged(real: Path) -> None:
    run = open_run(next((real / "param" / "dlrm_8rank").glob("worker0_*.json.gz")))
    report = run_rules(run)
    raw = [f for r in report.results for f in r.findings]
    assert len(set(device_ranks(run).values())) == 1
    assert across_ranks(raw, device_ranks(run)) == raw
    assert not any(f.ranks for f in report.findings)


def test_html_report_shows_each_findings_rank_table(real: Path) -> None:
    from advisor.engine.report_data import collect
    from advisor.reports.context import build_run_report
    from advisor.reports.html import render_run_html

    run = open_run(real / "param" / "dlrm_8rank")
    inputs = collect(run)
    across = [f for f in inputs.analysis.to_dict()["findings"] if f.get("ranks")]
    report = build_run_report(inputs)
    views = [v for v in report.findings if v.rank_rows]
    assert len(views) == len(across) >= 2
    for v, f in zip(views, across, strict=True):
        assert [row[0] for row in v.rank_rows] == [str(r["rank"]) for r in f["ranks"]]
    html = render_run_html(inputs)
    assert html.count("per rank (8 ranks)") == sum(1 for f in across if len(f["ranks"]) == 8)
