"""Name normalization, k-th instance matching, and run-time weighting of ncu speedups (inline data)."""

from __future__ import annotations

import pytest

from advisor.perf.kernel_class import ClassifiedKernel, KernelClass
from advisor.perf.ncu_join import TimelineKernel, base_name, join_kernels, normalize_name
from advisor.perf.ncu_read import NcuLaunch
from advisor.perf.peaks import RoofSet
from advisor.perf.roofline import KernelRoofline


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("void K<(int)128, (bool)0, (Kind)1>(T1::Params)", "K<128, false, 1>(K<128, false, 1>::Params)"),
        ("void f<(unsigned int)3>(int)", "void f<3u>(int)"),
        ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
        (
            "void at::native::elementwise_kernel<128, 4, Lambda>(int, Lambda)",
            "at::native::elementwise_kernel<128,4,Lambda>",
        ),
    ],
)
def test_same_kernel_two_spellings(a: str, b: str) -> None:
    assert normalize_name(a) == normalize_name(b)


def test_base_name() -> None:
    assert base_name("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<X>>(T1::Params)") == "cutlass::Kernel"
    assert base_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"


def _ncu(i: int, name: str, cls: str, grid: int = 10, dur: int = 1000, ctx: str | None = None) -> ClassifiedKernel:
    la = NcuLaunch(i, name, 0, i, (grid, 1, 1), (256, 1, 1), dur, ctx, {}, {})
    rf = KernelRoofline(i, name, 0, dur, (), None, None, RoofSet(None))
    return ClassifiedKernel(la, rf, KernelClass(cls, f"sol_{cls}", "", "high"))


def _tl(i: int, name: str, start: int, dur: int, grid: int | None = 10, ctx: str | None = None) -> TimelineKernel:
    dims = (grid, 1, 1) if grid is not None else (None, None, None)
    block = (256, 1, 1) if grid is not None else (None, None, None)
    return TimelineKernel(i, name, 0, start, dur, dims, block, ctx)


def test_weights_and_speedups_scale_with_run_share() -> None:
    ncu = [_ncu(0, "void copy<(int)4>(float*)", "memory"), _ncu(1, "void gemm<(int)128>(P)", "compute", grid=64)]
    tl = [
        _tl(0, "copy<4>", 0, 300),
        _tl(1, "gemm<128>", 400, 500, grid=64),
        _tl(2, "copy<4>", 1000, 300),
        _tl(3, "unprofiled", 2000, 100),
        _tl(4, "gemm<128>", 3000, 500, grid=64),
        _tl(5, "copy<4>", 4000, 300),
    ]
    speedups = {
        0: [{"rule": "UncoalescedGlobalAccess", "est_speedup_pct": 50.0, "speedup_type": "local", "message": "m"}]
    }
    res = join_kernels(ncu, tl, speedups)
    assert res.match_rate == 1.0 and res.timeline_kernel_ns == 2000
    assert res.class_shares() == pytest.approx({"memory": 0.45, "compute": 0.5, "not_profiled": 0.05})
    (s,) = (s for g in res.groups for s in g.est_speedups)
    assert s["run_pct"] == pytest.approx(50.0 * 0.45) and s["est_gain_ns"] == pytest.approx(450.0)
    assert s["source"] == "Nsight Compute"
    assert [g.kernel_class for g in res.groups] == ["compute", "memory", None]  # largest share first
    (top,) = res.groups[1].est_speedups
    assert top["rule"] == "UncoalescedGlobalAccess" and top["run_pct"] == pytest.approx(22.5)


def test_kth_instance_and_context() -> None:
    """Second ncu instance in context B pairs with the second timeline launch in B, not the first overall."""
    ncu = [_ncu(0, "k", "memory", ctx="B"), _ncu(1, "k", "latency", ctx="B")]
    tl = [
        _tl(0, "k", 0, 10, ctx="A"),
        _tl(1, "k", 10, 10, ctx="B"),
        _tl(2, "k", 20, 10, ctx="A"),
        _tl(3, "k", 30, 10, ctx="B"),
    ]
    res = join_kernels(ncu, tl)
    assert [m.timeline.index for m in res.matches if m.timeline] == [1, 3]
    assert all(m.used_context for m in res.matches)


def test_grid_mismatch_falls_back_to_nothing_but_missing_config_matches_by_name() -> None:
    ncu = [_ncu(0, "k", "memory", grid=10)]
    assert join_kernels(ncu, [_tl(0, "k", 0, 10, grid=20)]).match_rate == 0.0
    res = join_kernels(ncu, [_tl(0, "k", 0, 10, grid=None)])  # Kineto without grid/block args
    assert res.match_rate == 1.0


def test_base_name_level_when_template_spelling_differs() -> None:
    ncu = [_ncu(0, "void ns::kern<Foo<int>, 3>(int)", "compute")]
    res = join_kernels(ncu, [_tl(0, "ns::kern<Foo<int32_t>, 3>", 0, 10)])
    assert res.matches[0].level == "base_name"
