"""The diff engine on small inline runs: verdicts, work normalization, comparability, findings matching."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from advisor.diff import diff_sides, side_from_runs
from advisor.diff.rulefacts import diff_findings
from advisor.model.store import Run
from advisor.model.validate import conform
from advisor.rules.base import Finding, Window

MS = 1_000_000
GEMM = (
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1>"
    "(cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1::Params)"
)
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)"
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"


def make_run(
    steps: int = 5,
    fmt: str = "kineto",
    gemm_ms: float = 6.0,
    add_ms: float = 1.0,
    gpu: str = "NVIDIA A100-SXM4-80GB",
    kernels: tuple[str, ...] = (GEMM, ADD),
    with_steps: bool = True,
    sha: str = "a",
    start_unix: int = 0,
    jitter: tuple[float, ...] = (),
) -> Run:
    """`steps` iterations, each: one GEMM then one ADD (per-step durations given), 1 ms gap between steps."""
    names = [*kernels, "ProfilerStep#1"]
    strings = {n: i for i, n in enumerate(names)}
    k: dict[str, list[Any]] = {"device_id": [], "start_ns": [], "end_ns": [], "name_id": []}
    r: dict[str, list[Any]] = {
        "range_id": [],
        "depth": [],
        "source": [],
        "name_id": [],
        "start_ns": [],
        "end_ns": [],
        "step": [],
        "pid": [],
    }
    t = 0
    durations = {GEMM: gemm_ms, ADD: add_ms, NCCL: 2.0}
    for s in range(steps):
        t0 = t
        extra = jitter[s] if s < len(jitter) else 0.0
        for name in kernels:
            d = int((durations.get(name, 1.0) + (extra if name == kernels[0] else 0.0)) * MS)
            k["device_id"].append(0)
            k["start_ns"].append(t)
            k["end_ns"].append(t + d)
            k["name_id"].append(strings[name])
            t += d
        t += MS
        if with_steps:
            for col, val in (
                ("range_id", s),
                ("depth", 0),
                ("source", "profiler_step"),
                ("name_id", strings["ProfilerStep#1"]),
                ("start_ns", t0),
                ("end_ns", t),
                ("step", s),
                ("pid", 1),
            ):
                r[col].append(val)
    tables = {
        "kernels": conform("kernels", pa.table(k)),
        "ranges": conform("ranges", pa.table(r)),
        "devices": conform("devices", pa.table({"device_id": [0], "rank": [0], "local_index": [0], "name": [gpu]})),
        "strings": conform("strings", pa.table({"string_id": list(strings.values()), "value": list(strings)})),
        "runs": conform(
            "runs",
            pa.table(
                {
                    "source_path": [f"mem-{sha}"],
                    "source_sha256": [sha],
                    "source_bytes": [1],
                    "format": [fmt],
                    "tool": ["PyTorch Profiler"],
                    "trace_start_ns": [0],
                    "trace_end_ns": [t],
                    "capture_start_unix_ns": [start_unix],
                    "captured": ["kernels,ranges,devices"],
                }
            ),
        ),
    }
    return Run.from_tables(tables)


def diff(base: list[Run], new: list[Run], **kw: Any) -> dict[str, Any]:
    return diff_sides(
        side_from_runs("base", base, with_rules=False), side_from_runs("new", new, with_rules=False), **kw
    )


def test_a_vs_a_is_neutral() -> None:
    d = diff([make_run(sha="a")], [make_run(sha="a")])
    assert d["verdict"]["verdict"] == "neutral"
    assert d["metric"]["delta"]["ns"] == 0


def test_slower_gemm_is_a_regression_with_an_interval() -> None:
    jit = (0.1, -0.1, 0.05, -0.05, 0.0)
    d = diff([make_run(sha="a", jitter=jit)], [make_run(gemm_ms=8.0, sha="b", start_unix=10**15, jitter=jit)])
    v, m = d["verdict"], d["metric"]
    assert v["verdict"] == "regression", v
    # base step = 6 + 1 + 1 gap = 8 ms; new = 10 ms: +25% of base step time
    assert m["base_ns"] == 8 * MS and m["new_ns"] == 10 * MS
    assert m["delta"]["pct"] == 25.0 and "base mean step time" in m["delta"]["of"]
    assert m["ci"] is not None and m["ci"]["low_pct"] > 0
    top = d["kernels"]["items"][0]
    assert top["key"] == "cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1" and top["delta_ns"] == 2 * MS
    assert top["contribution"]["pct"] == 25.0
    # one capture per side: the interval holds step-to-step noise only, and says so; +25% [+22%, +28%] lies wholly
    # beyond the 5% threshold, so the change is called
    assert any(c.startswith("the confidence interval is over the steps of one capture per side (within-capture)")
               for c in d["caveats"])
    assert m["ci"]["scope"] == "within-capture" and v["interval"] == "within-capture"
    assert v["rule"] == "interval-beyond-threshold" and "(within-capture: the steps of one capture per side)" in v[
        "reason"]


def test_faster_is_an_improvement() -> None:
    d = diff([make_run(sha="a")], [make_run(gemm_ms=4.0, sha="b", start_unix=10**15)])
    assert d["verdict"]["verdict"] == "improvement"


def test_small_change_is_neutral_at_default_threshold() -> None:
    d = diff([make_run(sha="a")], [make_run(gemm_ms=6.2, sha="b", start_unix=10**15)])
    assert d["metric"]["delta"]["pct"] == 2.5
    assert d["verdict"]["verdict"] == "neutral"


def test_noisy_change_is_inconclusive() -> None:
    d = diff(
        [make_run(sha="a", jitter=(0, 4, 0, 4, 0))], [make_run(sha="b", start_unix=10**15, jitter=(4, 0, 4, 0, 4))]
    )
    assert d["verdict"]["verdict"] == "inconclusive" and "includes no change" in d["verdict"]["reason"]


def test_different_gpus_are_not_comparable() -> None:
    d = diff([make_run(sha="a")], [make_run(gemm_ms=9.0, sha="b", gpu="Tesla V100-SXM2-16GB", start_unix=10**15)])
    assert d["verdict"]["verdict"] == "inconclusive"
    assert d["verdict"]["reason"].startswith("not comparable: different GPUs")


def test_different_workloads_are_not_comparable() -> None:
    d = diff([make_run(sha="a")], [make_run(sha="b", kernels=("other_kernel_a", "other_kernel_b"), start_unix=10**15)])
    assert d["verdict"]["verdict"] == "inconclusive" and "different workloads" in d["verdict"]["reason"]
    assert d["kernels"]["new_count"] == 2 and d["kernels"]["gone_count"] == 2


def test_work_is_normalized_without_steps() -> None:
    """Half as many iterations captured, same cost per iteration: neutral, not a 50% improvement."""
    d = diff(
        [make_run(steps=10, with_steps=False, sha="a")],
        [make_run(steps=5, with_steps=False, sha="b", start_unix=10**15)],
    )
    assert d["alignment"]["work"]["basis"] == "kernel-counts"
    assert d["alignment"]["work"]["ratio"] == pytest.approx(0.5)
    assert d["verdict"]["verdict"] == "neutral"
    assert abs(d["metric"]["delta"]["pct"]) < 12  # the last gap is not in the GPU window: 79 vs 2 x 39 ms


def test_new_kernel_is_listed_as_new() -> None:
    d = diff([make_run(sha="a")], [make_run(sha="b", kernels=(GEMM, ADD, NCCL), start_unix=10**15)])
    new = d["kernels"]["new"]
    assert [r["key"] for r in new] == ["ncclKernel_AllReduce_RING_LL_Sum_float"]
    assert new[0]["new"]["total_ns"] == 2 * MS  # per step


def test_simultaneous_captures_are_the_same_session() -> None:
    d = diff([make_run(sha="a", start_unix=10**15)], [make_run(gemm_ms=9.0, sha="b", start_unix=10**15 + 5)])
    assert d["verdict"]["verdict"] == "neutral" and "same capture session" in d["verdict"]["reason"]


def test_repeated_captures_give_an_interval() -> None:
    base = [make_run(sha=f"b{i}", start_unix=i * 10**12, gemm_ms=6.0 + 0.05 * i) for i in range(3)]
    new = [make_run(sha=f"n{i}", start_unix=10**15 + i * 10**12, gemm_ms=7.0 + 0.05 * i) for i in range(3)]
    d = diff(base, new)
    m = d["metric"]
    assert m["samples"]["base"] == 3 and "captures" in m["samples"]["base_kind"]
    assert m["ci"] is not None and d["verdict"]["verdict"] == "regression"
    assert not any("steps of one capture per side" in c for c in d["caveats"])  # captures carry run-to-run noise


def _f(code: str, location: str, gain: int) -> Finding:
    return Finding(code, "x", "launch", "m", Window(), (), gain, "basis", (), location)


def test_findings_matched_by_fingerprint() -> None:
    base = (_f("LA001", "a", 10 * MS), _f("IO001", "b", 5 * MS), _f("CO001", "c", 1 * MS))
    new = (_f("LA001", "a", 4 * MS), _f("CO001", "c", 1 * MS + 5), _f("ME002", "d", 2 * MS))
    d = diff_findings(base, new)
    assert d is not None
    assert [f["fingerprint"] for f in d["new"]] == [new[2].fingerprint]
    assert [f["fingerprint"] for f in d["resolved"]] == [base[1].fingerprint]
    assert [(f["fingerprint"], f["delta_est_gain_ns"]) for f in d["changed"]] == [(base[0].fingerprint, -6 * MS)]
    assert d["unchanged"] == 1
    assert diff_findings(None, new) is None


def test_cross_format_diff_states_its_caveats() -> None:
    d = diff([make_run(sha="a")], [make_run(sha="b", fmt="nsys-sqlite", start_unix=10**15)])
    assert d["verdict"]["verdict"] == "neutral"
    assert any(c.startswith("cross-format diff (kineto vs nsys-sqlite)") for c in d["caveats"])


def test_findings_on_aligned_devices_match_across_device_ids() -> None:
    """Rank 3 is device 3 in one run and device 0 in the other: its finding is the same finding."""
    base = (_f("ME005", "device=3", 9 * MS),)
    new = (_f("ME005", "device=0", 3 * MS),)
    d = diff_findings(base, new, {3: "rank 3"}, {0: "rank 3"})
    assert d is not None and not d["new"] and not d["resolved"]
    assert d["changed"][0]["delta_est_gain_ns"] == -6 * MS


# ---- one capture per side: the within-capture interval widens the threshold ------------------------------------

NOISY = (0.4, -0.4, 0.2, -0.2, 0.0)  # ms added to each step's GEMM: step time 8.0 ms +- 0.3 ms


def test_within_capture_change_must_clear_the_threshold_with_its_interval() -> None:
    """+7.5% is beyond the 5% threshold and its step interval excludes zero, but the interval (steps of one capture
    per side) reaches below +5%: inconclusive, not a regression; the gate has nothing to fail on."""
    d = diff([make_run(sha="a", jitter=NOISY)], [make_run(gemm_ms=6.6, sha="b", start_unix=10**15, jitter=NOISY)])
    v, m = d["verdict"], d["metric"]
    assert m["delta"]["pct"] == 7.5 and m["samples"]["base_kind"] == "steps of one capture"
    assert m["ci"]["scope"] == "within-capture"
    assert 0 < m["ci"]["low_pct"] < 5 < m["ci"]["high_pct"], m["ci"]  # Welch over 5 vs 5 steps: [+1.7%, +13.3%]
    assert (m["ci"]["low_pct"], m["ci"]["high_pct"]) == (1.7, 13.3)
    assert v["verdict"] == "inconclusive" and v["rule"] == "interval-reaches-threshold"
    assert "within-capture (the steps of one capture per side" in v["reason"]
    assert "repeat the capture >= 3 times per side" in v["reason"]
    assert v["confidence"].startswith("within-capture interval")
    from advisor.cli.commands.diff import gate, text

    d["gate"] = gate(d, 5.0)
    assert not d["gate"]["failed"]
    out = text(d)
    assert "VERDICT: INCONCLUSIVE" in out and "within-capture" in out.split("CI gate")[0]


def test_same_change_across_captures_is_called() -> None:
    """The same +7.5% measured as 3 captures per side: each capture is a sample, the interval carries run-to-run
    variation, and a point change beyond the threshold with an interval excluding zero is a regression."""
    base = [make_run(sha=f"b{i}", start_unix=i * 10**12, gemm_ms=6.0 + 0.05 * (i - 1)) for i in range(3)]
    new = [make_run(sha=f"n{i}", start_unix=10**15 + i * 10**12, gemm_ms=6.6 + 0.05 * (i - 1)) for i in range(3)]
    d = diff(base, new)
    v, m = d["verdict"], d["metric"]
    assert m["delta"]["pct"] == 7.5 and m["ci"]["scope"] == "between-captures" and v["interval"] == "between-captures"
    assert v["verdict"] == "regression" and v["rule"] == "interval-excludes-zero"
    assert "within-capture" not in v["reason"]


def test_within_capture_improvement_needs_the_whole_interval_below_minus_threshold() -> None:
    d = diff([make_run(sha="a", jitter=NOISY)], [make_run(gemm_ms=5.4, sha="b", start_unix=10**15, jitter=NOISY)])
    assert d["metric"]["delta"]["pct"] == -7.5
    assert d["verdict"]["verdict"] == "inconclusive" and d["verdict"]["rule"] == "interval-reaches-threshold"
    clear = diff([make_run(sha="a", jitter=NOISY)], [make_run(gemm_ms=4.0, sha="b", start_unix=10**15, jitter=NOISY)])
    assert clear["verdict"]["verdict"] == "improvement" and clear["metric"]["ci"]["high_pct"] < -5


def test_a_vs_a_noise_is_neutral_within_capture() -> None:
    """Two captures of one program, steps shuffled: the change is within the threshold, neutral."""
    d = diff([make_run(sha="a", jitter=NOISY)], [make_run(sha="b", start_unix=10**15, jitter=NOISY[::-1])])
    assert d["metric"]["delta"]["pct"] == 0.0 and d["verdict"]["verdict"] == "neutral"
