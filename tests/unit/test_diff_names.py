"""Kernel and range name normalization: noise goes, identity stays."""

from __future__ import annotations

import pytest

from advisor.diff.names import gpu_key, kernel_family, kernel_key, range_key

# (Kineto / gcc demangler spelling, nsys / cu++filt spelling) of the same kernel
SAME = [
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
        "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
        "void at::native::vectorized_elementwise_kernel<(int)8, at::native::CUDAFunctor_add<float>, "
        "at::detail::Array<char *, (unsigned long)3>>(int, T2, T3)",
    ),
    (
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::(anonymous namespace)::"
        "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(float)#1}>"
        "(at::TensorIteratorBase&, at::native::(anonymous namespace)::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
        "::{lambda()#3}::operator()() const::{lambda(float)#1} con"
        "st&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl<>)",
        "void at::native::elementwise_kernel<(int)128, (int)2, void at::native::gpu_kernel_impl<at::native::<unnamed>::"
        "direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const::"
        "[lambda(float) (instance 1)]>(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)",
    ),
    (
        "void split_embedding_backward_codegen_rowwise_adagrad_u"
        "nweighted_kernel_cta_per_row_1<float, float, float, 2ul>"
        "(at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>)",
        "void split_embedding_backward_codegen_rowwise_adagrad_u"
        "nweighted_kernel_cta_per_row_1<float, float, float, 5ul>"
        "(at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>)",
    ),
    ("triton_poi_fused_add_0", "triton_poi_fused_add_3"),
    ("triton_poi_fused_add_cos_sin_0d1d2de", "triton_poi_fused_add_cos_sin_0"),
    (
        "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
        "ncclDevKernel_SendRecv(ncclDevKernelArgs)",
    ),
    ("my_kernel_deadbeef12", "my_kernel_0badc0de99"),
    ("fused_kernel <<<128, 256>>>", "fused_kernel"),
]

DIFFERENT = [
    # the functor names the op: add and mul are different work
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native"
        "::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int)",
        "void at::native::vectorized_elementwise_kernel<4, at::nat"
        "ive::MulFunctor<float>, at::detail::Array<char*, 3> >(int)",
    ),
    # CUTLASS tile shapes are part of the identity
    (
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_a"
        "lign1>(cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1::Params)",
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x4_nn_a"
        "lign1>(cutlass_80_tensorop_s1688gemm_128x64_32x4_nn_align1::Params)",
    ),
    ("volta_sgemm_128x32_nt", "ampere_sgemm_128x32_nt"),
    ("triton_poi_fused_add_0", "triton_poi_fused_mul_0"),
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_noise_does_not_break_matching(a: str, b: str) -> None:
    assert kernel_key(a) == kernel_key(b)


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_identity_is_kept(a: str, b: str) -> None:
    assert kernel_key(a) != kernel_key(b)


def test_cutlass_key_is_the_tile_name() -> None:
    name = (
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1>"
        "(cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1::Params)"
    )
    assert kernel_key(name) == "cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1"


def test_specific_keys() -> None:
    assert kernel_key("triton_poi_fused_add_0") == "triton_poi_fused_add"
    assert (
        kernel_key("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)")
        == "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"
    )
    assert kernel_family(
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)"
    ) == ("at::native::vectorized_elementwise_kernel")
    assert (
        kernel_key("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN") == "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN"
    )


def test_range_key() -> None:
    assert range_key("aten::copy_, op_id = 999602") == "aten::copy_"
    assert range_key("FlashAttnFunc, seq = 45368, op_id = 990812") == "FlashAttnFunc"
    assert range_key("FSDP::pre_forward (blocks.22._checkpoint_wrapped_module), op_id = 1") == (
        "FSDP::pre_forward (blocks.N._checkpoint_wrapped_module)"
    )
    assert range_key("ProfilerStep#12") == "ProfilerStep#*"
    assert range_key("## forward ##") == "## forward ##"
    # torch.compile graph calls: the code hash changes with the graph, the call site does not
    assert range_key("## Call CompiledFxGraph f45ipyy7o6o5koysvqcpxhftrmcryvrwodf53qq242xsibrjzsw3 ##") == (
        "## Call CompiledFxGraph ##"
    )
    assert range_key("## Call CompiledFxGraph fexlpn7xbgm5czevvhesbtbgvtrnxfw3pdxgx2dlmentumxczvni ##") == (
        "## Call CompiledFxGraph ##"
    )


def test_gpu_key() -> None:
    assert gpu_key("NVIDIA H100 80GB HBM3") == gpu_key("H100 80GB HBM3")
    assert gpu_key("NVIDIA A100-PG509-200") != gpu_key("Tesla V100-SXM2-16GB")
    assert gpu_key(None) is None
