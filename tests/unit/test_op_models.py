"""Op models: a table of cases per family, each value worked out by hand from the model's formula."""

from __future__ import annotations

import pytest

from advisor.perf.ops import OpCall, gemm, op_cost
from advisor.perf.ops.base import broadcast, gpu_roofs, promote
from advisor.perf.ops.registry import BY_NAME, FAMILIES, MODELS, model_for
from advisor.perf.ops.triton import fused_ops

BF, F32, H = "c10::BFloat16", "float", "c10::Half"


def call(name: str, dims: list[object], types: list[str], concrete: list[str] | None = None,
         hint: str | None = None) -> OpCall:
    return OpCall(name, tuple(dims), tuple(types), (), tuple(concrete or [""] * len(dims)), hint)


# (id, call, FLOPs, bytes)
CASES = [
    # GEMM: 2MNK (+MN bias); bytes (MK + KN + MN) * bpe (+ N bias)
    ("mm", call("aten::mm", [[8944, 1024], [1024, 2816]], [BF, BF]), 2 * 8944 * 2816 * 1024,
     (8944 * 1024 + 1024 * 2816 + 8944 * 2816) * 2),
    ("addmm", call("aten::addmm", [[1024], [8944, 1024], [1024, 1024], [], []], [BF, BF, BF, "Scalar", "Scalar"]),
     2 * 8944 * 1024 * 1024 + 8944 * 1024, (8944 * 1024 + 1024 * 1024 + 8944 * 1024) * 2 + 1024 * 2),
    ("bmm", call("aten::bmm", [[8, 64, 32], [8, 32, 16]], [F32, F32]), 8 * 2 * 64 * 16 * 32,
     8 * (64 * 32 + 32 * 16 + 64 * 16) * 4),
    ("matmul-broadcast", call("aten::matmul", [[4, 8, 64, 32], [32, 16]], [H, H]), 32 * 2 * 64 * 16 * 32,
     32 * (64 * 32 + 32 * 16 + 64 * 16) * 2),
    ("linear", call("aten::linear", [[2, 10, 64], [128, 64], [128]], [BF, BF, BF]), 2 * 20 * 128 * 64 + 20 * 128,
     (20 * 64 + 64 * 128 + 20 * 128) * 2 + 128 * 2),
    ("scaled_mm-fp8", call("aten::_scaled_mm", [[128, 256], [256, 512], [], []],
                           ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", F32, F32]),
     2 * 128 * 512 * 256, 128 * 256 + 256 * 512 + 128 * 512 * 2),
    ("grouped_mm", call("aten::_grouped_mm", [[100, 64], [4, 64, 32], [4]], [BF, BF, "int"]),
     2 * 100 * 32 * 64, (100 * 64 + 4 * 64 * 32 + 100 * 32) * 2),
    # conv: out = (in + 2p - d(k-1) - 1)//s + 1; 2*N*Cout*prod(out)*(Cin/g)*prod(k)
    ("conv2d-s2p1", call("aten::convolution", [[8, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []],
                         [F32, F32, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
                         ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"]),
     2 * 8 * 64 * 112 * 112 * 3 * 49, (8 * 3 * 224 * 224 + 64 * 3 * 49 + 8 * 64 * 112 * 112) * 4),
    ("cudnn-depthwise", call("aten::cudnn_convolution", [[2, 32, 56, 56], [32, 1, 3, 3], [], [], [], [], [], [], []],
                             [H, H, "", "", "", "", "", "", ""], ["", "", "[1, 1]", "[1, 1]", "[1, 1]", "32", "", "",
                                                                  ""]),
     2 * 2 * 32 * 56 * 56 * 1 * 9, (2 * 32 * 56 * 56 + 32 * 9 + 2 * 32 * 56 * 56) * 2),
    ("conv-transposed", call("aten::convolution", [[1, 16, 8, 8], [16, 8, 4, 4], [], [], [], [], [], [], []],
                             [F32, F32, "", "", "", "", "", "", ""],
                             ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"]),
     2 * 1 * 16 * 64 * 8 * 16, (16 * 64 + 16 * 8 * 16 + 8 * 16 * 16) * 4),
    ("conv-backward", call("aten::convolution_backward",
                           [[2, 4, 6, 6], [2, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], [], [], [], []],
                           [F32, F32, F32, "", "", "", "", "", "", "", ""],
                           ["", "", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1",
                            "[True, True, False]"]),
     2 * (2 * 2 * 4 * 36 * 3 * 9), (2 * 4 * 36 + 2 * 3 * 64 + 4 * 27) * 4 + 2 * 3 * 64 * 4 + 4 * 27 * 4),
    # attention: B*Hq*(2 Nq Nkv dqk + 2 Nq Nkv dv), /2 causal; bytes Q+K+V+O with Hkv heads for K, V
    ("sdpa-flash-causal", call("aten::_scaled_dot_product_flash_attention",
                               [[16, 16, 559, 64]] * 3 + [[], [], [], []], [BF] * 3 + ["Scalar"] * 4,
                               ["", "", "", "0.", "True", "False", "0.125"]),
     16 * 16 * 4 * 559 * 559 * 64 // 2, 4 * 16 * 16 * 559 * 64 * 2),
    ("flash-fwd-gqa", call("aten::_flash_attention_forward",
                           [[2, 128, 32, 128], [2, 128, 8, 128], [2, 128, 8, 128]] + [[]] * 12, [BF] * 3 + [""] * 12,
                           ["", "", "", "", "", "128", "128", "0.", "False", "False", "0.08"] + [""] * 4),
     2 * 32 * 4 * 128 * 128 * 128, (2 * 32 * 128 * 128 * 2 + 2 * 8 * 128 * 128 * 2) * 2),
    ("efficient-bwd-causal", call("aten::_scaled_dot_product_efficient_attention_backward",
                                  [[1, 4, 256, 64]] * 4 + [[]] * 9, [H] * 4 + [""] * 9,
                                  [""] * 11 + ["True", ""]),
     2.5 * 4 * 4 * 256 * 256 * 64 / 2, (2 * 3 + 2) * 4 * 256 * 64 * 2),
    ("flash-varlen-equal", call("aten::_flash_attention_forward",
                                [[512, 8, 64], [512, 8, 64], [512, 8, 64], [5], [5]] + [[]] * 10,
                                [BF] * 3 + ["int", "int"] + [""] * 10,
                                ["", "", "", "", "", "128", "128", "0.", "True", "False", "0.1"] + [""] * 4),
     4 * 8 * 4 * 128 * 128 * 64 / 2, 4 * 4 * 8 * 128 * 64 * 2),
    # softmax 3N; norms 7N (layer), 4N (RMS)
    ("softmax-half-to-float", call("aten::_softmax", [[4, 8, 128], [], []], [H, "Scalar", "Scalar"],
                                   ["", "-1", "True"]), 3 * 4096, 4096 * 2 + 4096 * 4),
    ("layer_norm", call("aten::native_layer_norm", [[16, 512, 768], [], [768], [768], []],
                        [BF, "ScalarList", BF, BF, "Scalar"], ["", "[768]", "", "", "1e-05"]),
     7 * 16 * 512 * 768, 2 * 16 * 512 * 768 * 2 + 2 * 768 * 2 + 2 * 16 * 512 * 4),
    ("rms_norm", call("aten::_fused_rms_norm", [[8, 1024], [], [1024], []], [BF, "ScalarList", BF, "Scalar"],
                      ["", "[1024]", "", ""]), 4 * 8 * 1024, 2 * 8 * 1024 * 2 + 1024 * 2 + 8 * 4),
    ("vllm-fused-add-rms", call("_C::fused_add_rms_norm", [[888, 2880], [888, 2880], [2880], []],
                                [BF, BF, BF, "Scalar"]), 5 * 888 * 2880, 4 * 888 * 2880 * 2 + 2880 * 2),
    ("batch_norm-train", call("aten::native_batch_norm", [[2, 64, 8, 8], [64], [64], [64], [64], [], [], []],
                              [F32] * 5 + ["Scalar"] * 3, ["", "", "", "", "", "True", "0.1", "1e-5"]),
     7 * 2 * 64 * 64, 2 * 8192 * 4 + 4 * 64 * 4 + 2 * 64 * 4),
    ("group_norm", call("aten::native_group_norm", [[2, 32, 16, 16], [32], [32], [], [], [], [], []],
                        [F32, F32, F32, "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"],
                        ["", "", "", "2", "32", "256", "8", "1e-5"]),
     7 * 16384, 2 * 16384 * 4 + 2 * 32 * 4 + 2 * 16 * 4),
    # elementwise: numel(out) FLOPs; bytes inputs + output; broadcasting and promotion
    ("add-broadcast", call("aten::add", [[16, 16, 559, 64], [1, 1, 559, 64], []], [BF, BF, "Scalar"]),
     16 * 16 * 559 * 64, (16 * 16 * 559 * 64 * 2 + 559 * 64) * 2),
    ("mul-promote", call("aten::mul", [[16, 559, 1024], [16, 559, 1]], [F32, F32]),
     16 * 559 * 1024, (2 * 16 * 559 * 1024 + 16 * 559) * 4),
    ("mul-bf16-by-float", call("aten::mul", [[4, 8], [4, 8]], [BF, F32]), 32, 32 * 2 + 32 * 4 + 32 * 4),
    ("mul-scalar", call("aten::mul", [[1, 559, 64], []], [F32, "double"]), 559 * 64, 559 * 64 * 8 + 8),
    ("where", call("aten::where", [[4, 1], [4, 8], [1, 8]], ["bool", F32, F32]), 32, 4 + 32 * 4 + 8 * 4 + 32 * 4),
    ("silu_", call("aten::silu_", [[10, 10]], [H]), 100, 400),
    ("copy-cast", call("aten::copy_", [[16, 559, 1024], [16, 559, 1024], []], [BF, F32, "Scalar"]),
     0, 16 * 559 * 1024 * 6),
    ("fill", call("aten::fill_", [[888, 3072], []], [BF, "Scalar"]), 0, 888 * 3072 * 2),
    # reductions: numel(in) FLOPs; bytes in + out from the dims
    ("mean-keepdim", call("aten::mean", [[16, 559, 1024], [], [], []], [F32, "ScalarList", "Scalar", ""],
                          ["", "[-1]", "True", ""]), 16 * 559 * 1024, (16 * 559 * 1024 + 16 * 559) * 4),
    ("sum-all", call("aten::sum", [[10, 10], []], [F32, ""]), 100, 404),
    ("var", call("aten::var", [[32, 64], [], [], []], [F32, "ScalarList", "", "Scalar"], ["", "[1]", "", "False"]),
     3 * 2048, (2048 + 32) * 4),
    ("argmax", call("aten::argmax", [[8, 100], [], []], [H, "Scalar", "Scalar"], ["", "1", "False"]),
     800, 1600 + 64),
    ("max-binary", call("aten::max", [[4, 4], [4, 4]], [F32, F32]), 16, 192),
    ("cumsum", call("aten::cumsum", [[4, 256], [], []], [F32, "Scalar", ""], ["", "1", ""]), 1024, 8192),
    # movement by index
    ("embedding", call("aten::embedding", [[50000, 768], [8, 128], [], [], []], [BF, "long int", "", "", ""]),
     0, 8 * 128 * 8 + 2 * 8 * 128 * 768 * 2),
    ("index_select", call("aten::index_select", [[151936, 1024], [], [8944]], [BF, "Scalar", "long int"],
                          ["", "0", ""]), 0, 8944 * 8 + 2 * 8944 * 1024 * 2),
    ("gather", call("aten::gather", [[100, 50], [], [100, 5]], [F32, "Scalar", "long int"], ["", "1", ""]),
     0, 500 * 8 + 2 * 500 * 4),
    ("scatter_add", call("aten::scatter_add", [[100, 50], [], [100, 5], [100, 5]],
                         [F32, "Scalar", "long int", F32], ["", "1", "", ""]), 500, 500 * 8 + 500 * 4 + 2 * 500 * 4),
    ("cat-hint", call("aten::cat", [[[1, 559, 32], [1, 559, 32]], []], ["TensorList", "Scalar"], hint="bytes4"),
     0, 2 * 2 * 559 * 32 * 4),
    # pooling: out = floor((in + 2p - d(k-1) - 1)/s) + 1; numel(out)*prod(k) FLOPs; bytes in + out + indices
    ("max_pool2d", call("aten::max_pool2d_with_indices", [[10, 64, 112, 112], [], [], [], [], []],
                        [BF, "", "", "", "", ""], ["", "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", "False"]),
     10 * 64 * 56 * 56 * 9, (10 * 64 * 112 * 112 + 10 * 64 * 56 * 56) * 2 + 10 * 64 * 56 * 56 * 8),
    ("max_pool2d_backward", call("aten::max_pool2d_with_indices_backward",
                                 [[10, 64, 56, 56], [10, 64, 112, 112], [], [], [], [], [], [10, 64, 56, 56]],
                                 [BF, BF, "", "", "", "", "", "long int"],
                                 ["", "", "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", "False", ""]),
     10 * 64 * 56 * 56, (10 * 64 * 56 * 56 + 10 * 64 * 112 * 112) * 2 + 10 * 64 * 56 * 56 * 8),
    ("adaptive_avg_pool2d", call("aten::_adaptive_avg_pool2d", [[8, 2048, 7, 7], []], [H, ""], ["", "[1, 1]"]),
     8 * 2048 * 49, (8 * 2048 * 49 + 8 * 2048) * 2),
    ("cudnn-backward-input", call("aten::cudnn_convolution_backward_input",
                                  [[], [2, 8, 4, 4], [8, 3, 3, 3], [], [], [], [], [], [], []],
                                  ["", F32, F32, "", "", "", "", "", "", ""],
                                  ["[2, 3, 8, 8]", "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "", "", ""]),
     2 * 2 * 8 * 16 * 27, (2 * 8 * 16 + 8 * 27 + 2 * 3 * 64) * 4),
    # vLLM custom ops with shapes that pin the cost
    ("vllm-fp8-quant", call("_C::static_scaled_fp8_quant", [[888, 512], [888, 512], []],
                            ["c10::Float8_e4m3fn", BF, F32]), 2 * 888 * 512, 888 * 512 * 3 + 4),
    ("vllm-rotary", call("_C::rotary_embedding", [[888], [888, 512], [888, 64], [], [4096, 64], []],
                         ["long int", BF, BF, "Scalar", BF, "Scalar"], ["", "", "", "64", "", "True"]),
     3 * 888 * 9 * 64, 2 * (888 * 512 + 888 * 64) * 2 + 888 * 8 + 888 * 64 * 2),
    ("vllm-cache-fp8", call("_C_cache_ops::reshape_and_cache_flash",
                            [[888, 1, 64], [888, 1, 64], [100, 16, 1, 64], [100, 16, 1, 64], [888]],
                            [BF, BF, "unsigned char", "unsigned char", "long int"]),
     2 * 888 * 64, 2 * 888 * 64 * 3 + 888 * 8),
    # optimizer multi-tensor ops
    ("foreach_add", call("aten::_foreach_add_", [[[10, 10], [5]], [[10, 10], [5]], []],
                         ["TensorList", "TensorList", "Scalar"], hint=F32), 105, (210 + 105) * 4),
    ("fused_adamw", call("aten::_fused_adamw_", [[[1000]], [[1000]], [[1000]], [[1000]], [], [[]]],
                         ["TensorList"] * 4 + ["", "TensorList"]), 14 * 1000, 7 * 1000 * 4),
    # Inductor kernels: max numel x ops recovered from the name; bytes = every tensor argument
    ("triton-red", call("triton_red_fused_add_mean_mul_pow_rsqrt_0", [[8, 4096, 2048], [2048], [8, 4096, 2048], [],
                                                                       []], [BF, BF, BF, "Scalar", "Scalar"]),
     5 * 8 * 4096 * 2048, (2 * 8 * 4096 * 2048 + 2048) * 2),
    ("triton-poi-view", call("triton_poi_fused__unsafe_view_mul_silu_2", [[8, 4096, 8192], [32768, 8192], []],
                             [BF, BF, "Scalar"]), 2 * 32768 * 8192, 2 * 32768 * 8192 * 2),
]


@pytest.mark.parametrize(("case", "c", "flop", "moved"), CASES, ids=[x[0] for x in CASES])
def test_model_cases(case: str, c: OpCall, flop: float, moved: float) -> None:
    cost = op_cost(c)
    assert cost is not None, f"{case}: no cost"
    assert (cost.flop, cost.bytes) == (pytest.approx(flop), pytest.approx(moved))


UNPRICED = [
    ("no model", call("aten::upsample_nearest1d", [[1, 2, 3]], [F32])),
    ("mm without shapes", call("aten::mm", [[], []], [BF, BF])),
    ("mm inner dims disagree", call("aten::mm", [[4, 5], [6, 7]], [F32, F32])),
    ("varlen with unequal lengths", call("aten::_flash_attention_forward",
                                         [[500, 8, 64], [500, 8, 64], [500, 8, 64], [5], [5]] + [[]] * 10,
                                         [BF] * 3 + ["int", "int"] + [""] * 10,
                                         ["", "", "", "", "", "128", "128", "0.", "True", "False", "0.1"] + [""] * 4)),
    ("foreach without shapes", call("aten::_foreach_add_", [[], [], []], ["TensorList", "TensorList", "Scalar"])),
    ("cat of unknown dtype", call("aten::cat", [[[2, 3], [2, 3]], []], ["TensorList", "Scalar"])),
    ("triton name with an unknown part", call("triton_poi_fused_frobnicate_0", [[4, 4]], [F32])),
    ("conv without Concrete Inputs (stride, padding unknown)",
     OpCall("aten::cudnn_convolution", ([32, 64, 56, 56], [64, 64, 3, 3]), (F32, F32))),
    ("mean without Concrete Inputs (dims unknown)", OpCall("aten::mean", ([4, 8], [], []), (F32, "ScalarList", ""))),
    ("sdpa without Concrete Inputs (causal unknown)",
     OpCall("aten::_scaled_dot_product_flash_attention", ([1, 2, 8, 4],) * 3, (BF,) * 3)),
]


@pytest.mark.parametrize(("case", "c"), UNPRICED, ids=[x[0] for x in UNPRICED])
def test_unpriced_calls_are_never_guessed(case: str, c: OpCall) -> None:
    assert op_cost(c) is None, case


def test_precision_follows_unit_and_dtype() -> None:
    h100 = gpu_roofs("H100")
    assert gemm.cost(64, 64, 64, "bf16").precision(h100) == "bf16_tc"
    assert gemm.cost(64, 64, 64, "fp32").precision(h100) == "fp32"  # TF32 is opt-in in PyTorch
    assert gemm.cost(64, 64, 64, "fp32").precision(h100, tf32=True) == "tf32_tc"
    assert gemm.cost(64, 64, 64, "fp4").precision(h100) == "fp8_tc"  # no FP4 roof on Hopper: the next one down
    assert gemm.cost(64, 64, 64, "fp4").precision(gpu_roofs("B200")) == "fp4_tc"
    assert op_cost(call("aten::add", [[4], [4]], [BF, BF])).precision(h100) == "fp32"  # type: ignore[union-attr]
    assert op_cost(call("aten::add", [[4], [4]], ["double", "double"])).precision(h100) == "fp64"  # type: ignore[union-attr]


def test_python_api_roofline_time() -> None:
    """A 4096^3 BF16 GEMM on H100 SXM: 137.4 GFLOP / 989.5 TFLOP/s = 138.9 us, compute-bound; a 1-row GEMV is
    memory-bound at (1*4096 + 4096^2 + 4096) * 2 B / 3.35 TB/s."""
    r = gemm.cost(4096, 4096, 4096, dtype="bf16").on("H100")
    assert (r.precision, r.bound) == ("bf16_tc", "compute")
    assert r.time_s == pytest.approx(2 * 4096**3 / 989.5e12)
    v = gemm.cost(1, 4096, 4096, dtype="bf16").on("h100_sxm")
    assert v.bound == "memory" and v.time_s == pytest.approx((4096 + 4096**2 + 4096) * 2 / 3.35e12)
    assert gemm.cost(8192, 8192, 8192, "fp8").on("MI355X").compute_s == pytest.approx(2 * 8192**3 / 5033.2e12)
    with pytest.raises(KeyError, match="no peak-table row"):
        gemm.cost(1, 1, 1).on("Z9000")


def test_helpers() -> None:
    assert broadcast([16, 1, 559], [559]) == [16, 1, 559] and broadcast([3], [4]) is None
    assert promote("c10::BFloat16", "float") == "float" and promote("int", "long int") == "long int"
    assert fused_ops("triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1") == [
        "_unsafe_view", "add", "mean", "mul", "pow", "rsqrt"]


def test_every_model_documents_its_formula_and_every_family_has_cases() -> None:
    assert all(m.doc for m in MODELS), [m.names[0] for m in MODELS if not m.doc]
    covered = {model_for(c.name).family for _, c, _, _ in CASES}  # type: ignore[union-attr]
    assert covered == set(FAMILIES)
    assert len(BY_NAME) > 140  # op names priced (TraceLens models ~140)
