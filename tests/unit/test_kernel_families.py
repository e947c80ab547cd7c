"""Kernel family, precision and communication: the metric layer's one definition (kernel_families, kernel_names).

Names come from the libraries' own kernels (NCCL/RCCL, DeepEP, NVSHMEM, MSCCL++, vLLM/PyTorch/TensorRT-LLM
custom all-reduce, cuBLAS/cuBLASLt, CUTLASS, cuDNN, hipBLASLt/Tensile, MIOpen, CK, Triton/Inductor) and from
the real traces under the shared fixtures, including the names that must NOT change family (a sum reduction's
`reduce_kernel`, `cub::DispatchReduceByKey`, Inductor kernels fused from collectives, FBGEMM sparse ops,
cuDNN layout kernels, mangled CK names whose `_S8_` is a substitution, not int8).
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor import metrics
from tests.rules.casekit import build_run

# name -> (family, precision); precision is None where the name does not say (or the family has none)
NAMES: dict[str, tuple[str, str | None]] = {
    # --- communication: NCCL / RCCL (RCCL's kernels share NCCL's names) ---
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)": ("comm", None),
    "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)": ("comm", None),
    "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)": ("comm", None),
    "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)": ("comm", None),
    # DeepEP expert-parallel all-to-all, NVSHMEM, MSCCL++
    "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*)": ("comm", None),
    "void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*, int*, int)": ("comm", None),
    "void deep_ep::internode::combine<false, 8, 4, 4096>(int4*, float*, bool const*)": ("comm", None),
    "void deep_ep::internode_ll::dispatch<false, 3, 7168>(void*, float*, int*, long*)": ("comm", None),
    "nvshmemi_transfer_rma_kernel": ("comm", None),
    "void nvshmemx_barrier_all_block_kernel()": ("comm", None),
    "void mscclpp::allreduce8<__nv_bfloat16>(__nv_bfloat16*, mscclpp::DeviceHandle*, int)": ("comm", None),
    # custom all-reduce: vLLM/SGLang, PyTorch symmetric memory, TensorRT-LLM, Transformer Engine userbuffers
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, int)": ("comm", None),
    "void vllm::cross_device_reduce_2stage<float, 4>(vllm::RankData*, vllm::RankSignals, int)": ("comm", None),
    "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long)": (
        "comm",
        None,
    ),
    "void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 16, 8>(float*, unsigned long)": ("comm", None),
    "void c10d::symmetric_memory::two_shot_all_reduce_kernel<float, 16, 8>(float*, unsigned long)": ("comm", None),
    "void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>(tensorrt_llm::kernels::AllReduceParams)": (
        "comm",
        None,
    ),
    "void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8>(Params)": (
        "comm",
        None,
    ),
    "void userbuffers_fp16_sum_inplace_gpu_rw(int, int, int, int, int, int, void**, int)": ("comm", None),
    # --- not communication (negative cases from real traces and from PyTorch/Inductor naming) ---
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
    "unsigned int, float, 4> >(at::native::ReduceOp<float>)": ("reduce", None),
    "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<bool, at::native::all_reduce_impl<bool>>>(int)": (
        "reduce",
        None,
    ),
    "void cub::DeviceReduceByKeyKernel<cub::DispatchReduceByKey<long*, long*, cub::ConstantInputIterator<int, int>, "
    "int*, int*, cub::Equality, cub::Sum, int>::PtxReduceByKeyPolicy>(long*)": ("reduce", None),
    "void block_allreduce_sum_kernel<float>(float*, float const*, int)": ("reduce", None),
    "triton_poi_fused_all_reduce_0": ("elementwise", None),
    "triton_red_fused__to_copy_all_gather_into_tensor_1": ("reduce", None),
    "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*, bool*)": ("copy", None),
    # --- hipBLASLt / Tensile / rocBLAS / CK GEMMs ---
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x256x32_MI16x16x1_SN_LDSB1_AFC1_AFEM1_ASEM1_CLR1": (
        "gemm",
        "bf16",
    ),
    "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1_AFC1": ("gemm", "bf16"),
    "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1": ("gemm", "fp16"),
    "Cijk_Ailk_Bljk_SB_MT64x64x8_SE_1LDSB0_APM1_AF0EM1": ("gemm", "fp32"),
    "Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1_SN_LDSB1_AFC1": ("gemm", "fp32_mma"),
    "Cijk_Alik_Bljk_F8BS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x128_MI16x16x1_SN": ("gemm", "fp8"),
    "Cijk_Ailk_Bljk_DB_MT64x64x8_SE_1LDSB0": ("gemm", "fp64"),
    "void rocblas_gemm_batched_kernel<float, 64, 64, 16>(int, int, int, float const*, float*)": ("gemm", "fp32"),
    "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::bhalf_t>>(ck::Argument)": (
        "gemm",
        "bf16",
    ),
    "ck::tensor_operation::device::DeviceGemmXdlUniversal<ck::half_t, ck::half_t>": ("gemm", "fp16"),
    # --- MIOpen / CK convolutions ---
    "MIOpenConvUni": ("conv", None),
    "miopenSp3AsmConv_v21_1_2_gfx9_fp32_stride1": ("conv", "fp32"),
    "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2": ("conv", "bf16"),
    "igemm_wrw_gtcx2_nhwc_fp16_bx0_ex1_bt64x64x64": ("conv", "fp16"),
    "naive_conv_fwd_nchw_fp32": ("conv", "fp32"),
    "gridwise_convolution_implicit_gemm_v4r4_nchw_kcyx_nkhw": ("conv", None),
    "_ZN2ck16tensor_operation6device12_GLOBAL__N_149kernel_grouped_conv_fwd_multiple_abd_xdl_cshuffleINS_34Gridwise"
    "GemmMultipleD_xdl_cshuffleItttftNS_5TupleIJEEEtNS0_12element_wise11PassThroughES8_S8_LNS_25InMemory": (
        "conv",
        None,
    ),
    "MIOpenBatchNormFwdTrainSpatial": ("reduce", None),
    # --- cuDNN convolutions (FP32 SIMT on Volta) and layout kernels ---
    "void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int)": (
        "conv",
        "fp32",
    ),
    "volta_scudnn_128x64_relu_interior_nn_v1": ("conv", "fp32"),
    "cudnn_infer_volta_scudnn_128x64_stridedB_interior_nn_v1": ("conv", "fp32"),
    "volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1": ("conv", "fp32"),
    "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, float const*)": ("conv", "fp32"),
    "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, int)": ("conv", "fp32"),
    "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_nonfused::Params)": (
        "conv",
        "fp32",
    ),
    "void fft2d_r2c_32x32<float, false, 1u, false>(float2*, float const*, int, cudnn::reduced_divisor)": (
        "conv",
        "fp32",
    ),
    "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_stage5": ("conv", "tf32"),
    "sm80_xmma_dgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32": ("conv", "fp16"),
    "sm86_xmma_wgrad_implicit_gemm_indexed_bf16bf16_bf16f32_f32_nhwckrsc_nhwc": ("conv", "bf16"),
    "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>(Params)": (
        "copy",
        None,
    ),
    "void cudnn::engines_precompiled::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, true, false>(P)": (
        "copy",
        None,
    ),
    "void cudnn::ops::scalePackedTensor_kernel<float, float>(long, float*, float)": ("elementwise", None),
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>(cudnnTensorStruct)": (
        "reduce",
        None,
    ),
    # --- cuBLAS / cuBLASLt / CUTLASS GEMMs and their precision ---
    "volta_sgemm_128x64_nt": ("gemm", "fp32"),
    "ampere_sgemm_32x32_sliced1x4_tn": ("gemm", "fp32"),
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute": (
        "gemm",
        "fp32",
    ),
    "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8": ("gemm", "tf32"),
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off": (
        "gemm",
        "bf16",
    ),
    "sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1": ("gemm", "fp8"),
    "sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_tilesize128x128x64_stage4": ("gemm", "int8"),
    "volta_h884gemm_64x64_ldg8_nn": ("gemm", "fp16"),
    "volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn": ("gemm", "fp16"),
    "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn": ("gemm", "fp16"),
    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn": ("gemm", "fp16"),
    "volta_dgemm_64x64_nn": ("gemm", "fp64"),
    "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN": ("gemm", "bf16"),
    "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN": ("gemm", "fp16"),
    "nvjet_sss_128x128_64x4_1x1_v_bz_NNN": ("gemm", None),
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>(Params)": ("gemm", "tf32"),
    "void cutlass::Kernel<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(Params)": ("gemm", "fp32"),
    "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_nn_align1>(Params)": ("gemm", "bf16"),
    "void cutlass::Kernel<cutlass_tensorop_s8_i16832gemm_s8_256x128_64x3_tn_align16>(Params)": ("gemm", "int8"),
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::float_e4m3_t>>(Params)": (
        "gemm",
        "fp8",
    ),
    "void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>, float const*)": ("gemm", None),
    # FP4 / MX: an Fp32 accumulator in the name is not FP32 math
    "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_sm100f": (
        "gemm",
        "fp4",
    ),
    "_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1_swiglu": ("gemm", "fp4"),
    "void nvfp4_gemm_kernel<cutlass::bfloat16_t>(Params)": ("gemm", "fp4"),
    "sm100_xmma_gemm_mxfp8_mxfp8_bf16_f32_tn": ("gemm", "fp8"),
    "sm90_xmma_gemm_e4m3bf16_bf16f32_f32acc_tn_n": ("gemm", "fp8"),
    # --- Triton / Inductor: the prefix decides ---
    "triton_poi_fused_add_mul_0": ("elementwise", None),
    "triton_poi_fused_convolution_backward_3": ("elementwise", None),
    "triton_red_fused_sum_1": ("reduce", None),
    "triton_per_fused__softmax_2": ("reduce", None),
    "triton_tem_fused_mm_4": ("gemm", None),
    "triton_tem_fused_flex_attention_0": ("attention", None),
    # --- attention ---
    "attn_fwd": ("attention", None),
    "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>()": (
        "attention",
        "bf16",
    ),
    "fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t>::Params)": (
        "attention",
        "fp16",
    ),
    "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext": ("attention", "fp8"),
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64_4x1x1_kernel0_0": (
        "attention",
        "fp16",
    ),
    "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0, 1>": (
        "attention",
        "bf16",
    ),
    # --- memory-type kernels whose names mention other libraries ---
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>(int)": (
        "copy",
        None,
    ),
    "void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, "
    "__nv_bfloat16, 32, true>(int, int, __nv_bfloat16 const*, flashinfer::QuantizationSFLayout)": (
        "elementwise",
        None,
    ),
    "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
    "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long)": ("reduce", None),
    "void fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>(int, int, int const*)": (
        "copy",
        None,
    ),
    "void split_embedding_codegen_forward_unweighted_kernel<c10::Half, c10::Half, float, false, long, 2ul, 32ul>"
    "(at::GenericPackedTensorAccessor<c10::Half, 1ul, at::RestrictPtrTraits, long>, fbgemm_gpu::FixedDivisor)": (
        "copy",
        None,
    ),
    "void permute_pooled_embs_kernel<float>(float const*, long const*, long const*, long const*, float*)": (
        "copy",
        None,
    ),
    "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*, long)": (
        "reduce",
        None,
    ),
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)": (
        "elementwise",
        None,
    ),
    "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, float, adamMode_t>(int)": (
        "elementwise",
        None,
    ),
    "SubTensorOpWithScalar1d": ("elementwise", None),
    "Op2dTensorGeneric": ("elementwise", None),
    "__amd_rocclr_fillBufferAligned": ("copy", None),
    "__amd_rocclr_copyBuffer": ("copy", None),
    "saxpy(double *, double *, double *, double, int)": ("elementwise", None),
    # --- application kernels of no known family ---
    "void clover::par_ranged2d_kernel<advec_mom_kernel(int, int, int, int, clover::Buffer2D<double> &)::"
    "[lambda(int, int) (instance 1)]>(clover::Range2d, T1)": ("other", None),
    "void compute_cuda_kernel<long>(long*, long*, long*, long, long)": ("other", None),
    "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, "
    "at::native::templates::cuda::normal_and_transform<c10::Half, float>>(long)": ("elementwise", None),
    "void at::native::(anonymous namespace)::layer_norm_kernel<float>(long, float const*)": ("reduce", None),
}

FAMILIES = {"comm", "attention", "conv", "gemm", "reduce", "copy", "elementwise", "other"}
PRECISIONS = {"fp4", "fp8", "int8", "bf16", "fp16", "tf32", "fp32", "fp32_mma", "fp64"}


@pytest.fixture(scope="module")
def classified() -> dict[str, tuple[str, str | None]]:
    """Every name of the table through the metric, one kernel each."""
    kernels = [
        {"device_id": 0, "stream_id": 7, "start_ns": 10 * i, "end_ns": 10 * i + 5, "name": n}
        for i, n in enumerate(NAMES)
    ]
    run = build_run({"kernels": kernels})
    return {r["name"]: (r["family"], r["precision"]) for r in metrics.query(run, "kernel_families")}


@pytest.mark.parametrize("name", list(NAMES))
def test_family_and_precision_from_name(classified: dict[str, tuple[str, str | None]], name: str) -> None:
    assert classified[name] == NAMES[name], name


def test_vocabulary(classified: dict[str, tuple[str, str | None]]) -> None:
    assert {f for f, _ in classified.values()} <= FAMILIES
    assert {p for _, p in classified.values() if p is not None} <= PRECISIONS
    assert all(p is None for f, p in classified.values() if f not in ("gemm", "conv", "attention"))


def _kernel(name: str, start: int, **kw: Any) -> dict[str, Any]:
    return {"device_id": 0, "stream_id": 7, "start_ns": start, "end_ns": start + 100, "name": name, **kw}


def _families(tables: dict[str, list[dict[str, Any]]]) -> dict[int, tuple[str, str, str]]:
    """start_ns -> (family, family_basis, vclass) of each kernel."""
    run = build_run(tables)
    rows = metrics.query(run, "kernel_names")
    return {int(r["start_ns"]): (r["family"], r["family_basis"], r["vclass"]) for r in rows}


def test_kernel_under_record_param_comms_by_external_id() -> None:
    """Kineto: a kernel of no known family whose External id is a record_param_comms op is communication;
    a copy kernel the same op launched stays a copy, and an unknown kernel elsewhere stays other."""
    got = _families({
        "cpu_ops": [
            {"op_id": 1, "depth": 0, "category": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1,
             "start_ns": 0, "end_ns": 50, "external_id": 11},
            {"op_id": 2, "depth": 0, "category": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
             "start_ns": 60, "end_ns": 90, "external_id": 12},
        ],
        "kernels": [
            _kernel("my_custom_exchange_kernel", 1000, external_id=11),
            _kernel("void at::native::elementwise_kernel<128, 2, direct_copy_kernel_cuda>(int)", 2000, external_id=11),
            _kernel("my_custom_exchange_kernel", 3000, external_id=12, stream_id=9),
        ],
    })
    assert got[1000] == ("comm", "launch_op", "comm")
    assert got[2000] == ("copy", "name", "memory")
    assert got[3000] == ("other", "name", "other")


def test_kernel_launched_inside_c10d_op_and_nccl_nvtx_range() -> None:
    """Without External ids (older Kineto, nsys): the launch call's time on its thread inside a c10d:: op or inside
    NCCL's own NVTX range (ncclAllReduce / ncclGroupEnd) makes an unknown kernel communication; nested contexts
    (c10d::allreduce_ > record_param_comms) count whole, and a launch after the context does not."""
    api = [
        {"pid": 1, "tid": 1, "start_ns": t, "end_ns": t + 5, "api": "cuda_runtime", "name": "cudaLaunchKernel",
         "correlation_id": c}
        for t, c in ((15, 101), (45, 102), (80, 103), (205, 104))
    ]
    got = _families({
        "cpu_ops": [
            {"op_id": 1, "depth": 0, "category": "cpu_op", "name": "c10d::allreduce_", "pid": 1, "tid": 1,
             "start_ns": 10, "end_ns": 60},
            {"op_id": 2, "parent_id": 1, "depth": 1, "category": "cpu_op", "name": "record_param_comms", "pid": 1,
             "tid": 1, "start_ns": 12, "end_ns": 30},
        ],
        "ranges": [
            {"range_id": 1, "depth": 0, "source": "nvtx", "name": "ncclGroupEnd", "pid": 1, "tid": 1,
             "start_ns": 200, "end_ns": 210},
        ],
        "api_calls": api,
        "kernels": [
            _kernel("my_custom_exchange_kernel", 1000, correlation_id=101, pid=1),
            _kernel("my_custom_exchange_kernel", 2000, correlation_id=102, pid=1),
            _kernel("my_custom_exchange_kernel", 3000, correlation_id=103, pid=1, stream_id=9),
            _kernel("my_custom_exchange_kernel", 4000, correlation_id=104, pid=1),
        ],
    })
    assert got[1000][:2] == ("comm", "launch_op")
    assert got[2000][:2] == ("comm", "launch_op")  # after record_param_comms ended, still inside c10d::allreduce_
    assert got[3000] == ("other", "name", "other")
    assert got[4000][:2] == ("comm", "launch_op")


def test_dedicated_communication_stream() -> None:
    """An unknown kernel on a stream whose kernels are >= 90% communication and none of a known other family is
    communication; on a stream that also runs an elementwise kernel, or where communication is a minority, it
    is not."""
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    ew = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"
    kernels = [_kernel(nccl, 100 * i, stream_id=20) for i in range(9)] + [_kernel("my_pack_kernel", 5000, stream_id=20)]
    kernels += [_kernel(nccl, 10000 + 100 * i, stream_id=21) for i in range(9)]
    kernels += [_kernel(ew, 12000, stream_id=21), _kernel("my_pack_kernel", 13000, stream_id=21)]
    kernels += [_kernel(nccl, 20000, stream_id=22), _kernel("my_pack_kernel", 21000, stream_id=22)]
    got = _families({"kernels": kernels})
    assert got[5000] == ("comm", "comm_stream", "comm")
    assert got[13000] == ("other", "name", "other")
    assert got[21000] == ("other", "name", "other")
    assert got[0] == ("comm", "name", "comm")


# GEMM and attention kernels built for a thin problem (a decode step's few rows): memory-bound whatever the family
THIN = {
    "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_bias_TNT": True,  # cuBLASLt tile 64x8 (our H200 decode capture)
    "nvjet_sm90_tst_8x64_64x16_2x1_v_bz_bias_TNN": True,
    "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN": False,  # 128x256 tile; 64x4 is the K tile and stages
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x8x64_warpgroupsize1x1x1_execute_segment_k_off_kernel": True,
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4": False,
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma": False,
    "Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT16x16x256_MI16x16x1_SN_LDSB1_AFC1": True,  # Tensile macro tile
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1_AFC1": False,
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_32x1_nn_align8>(Params)": True,
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)": False,
    "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0": True,
    "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu": True,  # Triton MoE, BLOCK_M 16
    "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, cublasGemvParams<"
    "cublasGemvTensorStridedBatched<float const>, float> >(cublasGemvParams<float>, float, float)": True,
    "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, float, float, false, true, "
    "true, false, 7, false, cublasGemvParamsEx<int, float> >(cublasGemvParamsEx<int, float>)": True,
    # a GEMM whose template arguments name the Gemv tensor types is not thereby thin
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(cublasGemvTensorStridedBatched<float>)": False,
    "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>>()":
        True,
    "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, 1, 128, 256, false, 4>()": True,
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>(Params)":
        False,
    "volta_sgemm_128x64_nn": False,
}


def test_thin_gemm_and_attention_kernels_are_memory_bound() -> None:
    """A tile edge of 16 or less, a matrix-vector kernel or a decode/split-KV/paged attention kernel: libraries build
    these only for a problem that thin, where each weight or cache byte serves at most ~16 rows, far under any GPU's
    ridge point. kernel_names' verdict class follows (memory); the family stays what the name says."""
    kernels = [{"device_id": 0, "stream_id": 7, "start_ns": 10 * i, "end_ns": 10 * i + 5, "name": n}
               for i, n in enumerate(THIN)]
    run = build_run({"kernels": kernels})
    fams = {r["name"]: r for r in metrics.query(run, "kernel_families")}
    assert {n: bool(fams[n]["thin"]) for n in THIN} == THIN
    assert all(fams[n]["family"] in ("gemm", "attention") for n in THIN)
    vclass = {r["name"]: r["vclass"] for r in metrics.query(run, "kernel_names")}
    assert {n: vclass[n] == "memory" for n in THIN} == THIN
