"""The report's interactive timeline has a steps / NVTX lane above the GPU streams (issue 21: a PR reviewer
sees which step or phase a gap sits in). Checked against the trace's own events, read with the json module."""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import real_path

ROOT = Path(__file__).resolve().parents[2]
PAIR = "CP001_fp32_gemm_without_tensor_cores_baseline"
CP001 = ROOT / "fixtures" / "kineto" / PAIR / f"{PAIR}.json.gz"


def _timeline(trace: Path, tmp: Path) -> dict[str, Any]:
    out = tmp / "r.html"
    subprocess.run([sys.executable, "-m", "advisor", "report", str(trace), "-o", str(out)], check=True,
                   capture_output=True)
    packed = re.search(r'id="advisor-plots"[^>]*>(.*?)</script>', out.read_text(), re.S)
    assert packed is not None
    plots: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(packed.group(1).strip())))
    return plots["timeline"]


def _lane(tl: dict[str, Any]) -> list[Any]:
    (trace,) = [t for t in tl["data"] if str(t["name"]).startswith("steps / ranges")]
    return [c for c in trace["customdata"][::4]]  # one [name, duration] per drawn range


def test_steps_drawn_in_their_lane(tmp_path: Path) -> None:
    tl = _timeline(CP001, tmp_path)
    with gzip.open(CP001) as f:
        events = json.load(f)["traceEvents"]
    steps = sorted(e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                   and e["name"].startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    drawn = {name for name, _ in _lane(tl)}  # host marks and their GPU-side annotations share the lane
    assert {n for n in drawn if n.startswith("ProfilerStep#")} == set(steps)
    assert tl["layout"]["yaxis"]["ticktext"][0] == "ProfilerStep"


def test_top_level_annotations_drawn(tmp_path: Path) -> None:
    """resnet_kineto: 90 user annotations (DataLoader and step marks), none nested; each drawn once, clipped to
    the GPU window, the longest first when capped (here all fit)."""
    trace = real_path("param/resnet_kineto.json.gz")
    tl = _timeline(trace, tmp_path)
    with gzip.open(trace) as f:
        ann = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "user_annotation"]
    names = sorted(name for name, _ in _lane(tl))
    assert len(ann) == 90 and len(names) <= len(ann)
    assert set(names) <= {e["name"] for e in ann}
    assert "NVTX (top level)" in tl["layout"]["yaxis"]["ticktext"]


def test_diff_report_shows_both_timelines(tmp_path: Path) -> None:
    """`diff --format html`: the before and after timelines one above the other, each the run's own."""
    opt = ROOT / "fixtures" / "kineto" / PAIR.replace("baseline", "optimized")
    out = tmp_path / "d.html"
    subprocess.run([sys.executable, "-m", "advisor", "diff", str(CP001.parent), str(opt), "--format", "html", "-o",
                    str(out)], check=True, capture_output=True)
    page = out.read_text()
    section = page[page.index('id="timelines"'):page.index("</section>", page.index('id="timelines"'))]
    figures = re.findall(r'<figure class="fig" id="fig-timeline" data-shapes="(\d+)">', section)
    assert len(figures) == 2 and all(int(n) > 0 for n in figures)
    assert section.index("<h3>Before</h3>") < section.index("<h3>After</h3>")
