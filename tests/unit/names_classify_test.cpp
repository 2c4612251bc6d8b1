// Classification of real kernel names as they appear in PyTorch, cuBLAS, cuDNN,
// Triton/Inductor, flash-attention, vLLM and NCCL traces (demangled as c++filt shows them).
#include <gtest/gtest.h>

#include "names/classify.hpp"
#include "names/demangle.hpp"

using namespace kerncap::names;

namespace {

struct Case {
  bool cxx;          // a mangled C++ name (given here demangled), else a plain symbol
  const char* name;  // demangled form
  Kind kind;
  Category category;
  bool source_expected;
};

Classification run(const Case& c) {
  // The classifier only needs to know whether the reported name was mangled.
  return classify(c.cxx ? "_Z_test" : c.name, c.name);
}

constexpr bool Y = true, N = false;
using K = Kind;
using C = Category;

const Case kCases[] = {
    // ---- cuBLAS / cuBLASLt
    {N, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", K::Cublas, C::Gemm, N},
    {N, "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize96x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", K::Cublas, C::Gemm, N},
    {N, "ampere_sgemm_128x64_tn", K::Cublas, C::Gemm, N},
    {N, "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", K::Cublas, C::Gemm, N},
    {N, "volta_sgemm_128x64_nn", K::Cublas, C::Gemm, N},
    {N, "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", K::CublasLt, C::Gemm, N},
    {N, "nvjet_sm100_tst_64x32_64x16_2x1_2cta_h_bz_TNT", K::CublasLt, C::Gemm, N},
    {Y, "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>, float, float)", K::Cublas, C::Gemm, N},
    {Y, "void gemvx::kernel<int, int, float, float, float, float, false, true, true, false, 7, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>)", K::Cublas, C::Gemm, N},
    {Y, "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, float*, int*)", K::Cublas, C::Gemm, N},
    {Y, "void cublasLt::splitKreduce_kernel<32, 16, int, __nv_bfloat16, __nv_bfloat16, float, __nv_bfloat16, true, false, false, false, false>(cublasLt::cublasSplitKParams<float>, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, void*, long, float*, int*)", K::CublasLt, C::Gemm, N},
    // ---- CUTLASS: shipped inside cuBLAS (no source) vs templates in the user's code
    {Y, "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params)", K::Cutlass, C::Gemm, N},
    {Y, "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)", K::Cutlass, C::Gemm, N},
    {Y, "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaPipelined<int>, cutlass::epilogue::threadblock::Epilogue<int>, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<1>, false> >(cutlass::gemm::kernel::Gemm<int>::Params)", K::Cutlass, C::Gemm, Y},
    {Y, "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, int> >(cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, int>::Params)", K::Cutlass, C::Gemm, Y},
    // ---- cuDNN
    {N, "sm80_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nchw_tilesize64x128x64_stage3_warpsize2x2x1_g1_tensor16x8x16_kernel", K::Cudnn, C::Gemm, N},
    {N, "sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn", K::Cudnn, C::Gemm, N},
    {Y, "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)", K::Cudnn, C::Copy, N},
    {N, "cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x64_4x1x1_kernel0_0", K::Cudnn, C::Attention, N},
    {Y, "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)", K::Cudnn, C::Gemm, N},
    // ---- flash-attention (and PyTorch's copy of it)
    {Y, "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)", K::FlashAttention, C::Attention, N},
    {Y, "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false, false>(pytorch_flash::Flash_fwd_params)", K::FlashAttention, C::Attention, N},
    {Y, "void pytorch_flash::flash_bwd_dot_do_o_kernel<true, pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params)", K::FlashAttention, C::Attention, N},
    {Y, "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::half_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::half_t> >, false, false, false, false, true, false, true, false>(flash::Flash_fwd_params)", K::FlashAttention, C::Attention, N},
    {Y, "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<int> > >(flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<int> >::Params)", K::FlashAttention, C::Attention, N},
    // ---- ATen (PyTorch's own kernels)
    {Y, "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)", K::Aten, C::Elementwise, N},
    {Y, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)", K::Aten, C::Memset, N},
    {Y, "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1})", K::Aten, C::Copy, N},
    {Y, "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)", K::Aten, C::Reduce, N},
    {Y, "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", K::Aten, C::Softmax, N},
    {Y, "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, float const*, int, int, int, bool const*, int, bool)", K::Aten, C::Softmax, N},
    {Y, "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)", K::Aten, C::Norm, N},
    {Y, "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<float, float>(long, long, float const*, float const*, float const*, float const*, float*, float*)", K::Aten, C::Norm, N},
    {Y, "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 3, 128, 1>(at::native::(anonymous namespace)::OpaqueType<4u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", K::Aten, C::Copy, N},
    {Y, "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)", K::Aten, C::Copy, N},
    {Y, "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)", K::Aten, C::Elementwise, N},
    {Y, "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", K::Aten, C::Attention, N},
    {Y, "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float const, unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int)", K::Aten, C::RouterTopk, N},
    {Y, "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<long, long, int>::Policy800, false, long, long, int, int, at_cuda_detail::cub::detail::identity_decomposer_t>(int*, int*, long*, long const*, long*, long const*, int, int, int, at_cuda_detail::cub::detail::identity_decomposer_t)", K::CubThrust, C::Other, Y},
    // ---- Triton: Inductor's generated kernels and hand-written @triton.jit kernels
    {N, "triton_poi_fused_add_mul_0", K::Triton, C::Elementwise, Y},
    {N, "triton_poi_fused__to_copy_0", K::Triton, C::Copy, Y},
    {N, "triton_poi_fused_clone_3", K::Triton, C::Copy, Y},
    {N, "triton_poi_fused__to_copy_add_mul_2", K::Triton, C::Elementwise, Y},
    {N, "triton_poi_fused_addmm_relu_0", K::Triton, C::Elementwise, Y},
    {N, "triton_per_fused__softmax_0", K::Triton, C::Softmax, Y},
    {N, "triton_per_fused__log_softmax_nll_loss_forward_4", K::Triton, C::Softmax, Y},
    {N, "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", K::Triton, C::Norm, Y},
    {N, "triton_per_fused_add_embedding_iota_mul_rsqrt_sub_var_mean_1", K::Triton, C::Norm, Y},
    {N, "triton_per_fused_add_native_dropout_backward_native_layer_norm_backward_13", K::Triton, C::Norm, Y},
    {N, "triton_per_fused_sum_4", K::Triton, C::Reduce, Y},
    {N, "triton_red_fused__to_copy_sum_1", K::Triton, C::Reduce, Y},
    {N, "triton_tem_fused_mm_0", K::Triton, C::Gemm, Y},
    {N, "_attn_fwd", K::Triton, C::Attention, Y},
    {N, "matmul_kernel", K::Triton, C::Gemm, Y},
    {N, "_layer_norm_fwd_fused", K::Triton, C::Norm, Y},
    {N, "softmax_kernel", K::Triton, C::Softmax, Y},
    {N, "fused_moe_kernel", K::Triton, C::MoeGemm, Y},
    {N, "add_kernel", K::Triton, C::Elementwise, Y},
    {N, "add_kernel_0d1d2d3de", K::Triton, C::Elementwise, Y},  // Triton 2.x signature suffix
    // ---- vLLM / FlashInfer custom C++ kernels: user code
    {Y, "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)", K::User, C::Norm, Y},
    {Y, "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", K::User, C::Norm, Y},
    {Y, "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)", K::User, C::Elementwise, Y},
    {Y, "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)", K::User, C::KvCache, Y},
    {Y, "void vllm::paged_attention_v2_kernel<unsigned short, unsigned short, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, unsigned short*, unsigned short const*, unsigned short const*, unsigned short const*, int, float, int const*, int const*, int, float const*, int, int, int, float const*, float const*, int, int, int)", K::User, C::Attention, Y},
    {Y, "void vllm::moe::topkGatingSoftmax<8, 64, 4, 16, int>(float const*, bool const*, float*, int, int*, int*, int, int, int)", K::User, C::RouterTopk, Y},
    {Y, "void vllm::moe::moe_align_block_size_kernel<int>(int*, int*, int*, int*, int, int, int, int, unsigned long, int*)", K::User, C::RouterTopk, Y},
    {Y, "void vllm::moe::moe_sum_kernel<c10::BFloat16, 2>(c10::BFloat16*, c10::BFloat16 const*, int)", K::User, C::Reduce, Y},
    {Y, "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)", K::User, C::Elementwise, Y},
    {Y, "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", K::User, C::Collective, Y},
    {Y, "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<int>, flashinfer::PagedParams<int> >(flashinfer::PagedParams<int>)", K::User, C::Attention, Y},
    // ---- llama.cpp (ggml-cuda): quantized GEMM/GEMV and (de)quantization
    {Y, "void mul_mat_q<(ggml_type)12, 64, false>(char const*, int const*, int const*, int const*, float*, float*, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int)", K::User, C::Gemm, Y},
    {Y, "void mul_mat_vec_q<(ggml_type)12, 1, false>(void const*, void const*, int const*, float*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int)", K::User, C::Gemm, Y},
    {Y, "void mul_mat_vec_f<__half, __half, 1, 128, false>(__half const*, __half const*, int const*, float*, int, int, int, int, int, int, int, int, int, int, int, int, int)", K::User, C::Gemm, Y},
    {Y, "void dequantize_mul_mat_vec<(ggml_type)8>(void const*, float const*, float*, int, int)", K::User, C::Gemm, Y},
    {Y, "void quantize_mmq_q8_1<(mmq_q8_1_ds_layout)1>(float const*, int const*, void*, long, long, long, long, long, long, long)", K::User, C::Quantize, Y},
    {Y, "quantize_q8_1(float const*, void*, long, long, long, long, long, long)", K::User, C::Quantize, Y},
    {Y, "void dequantize_block<32, 2, &(dequantize_q4_0(void const*, long, int, float2&)), __half>(void const*, __half*, long)", K::User, C::Quantize, Y},
    {Y, "void cpy_f32_f16<&(cpy_1_f32_f16(char const*, char*))>(char const*, char*, int, int, int, int, int, int, int, int, int, int, int, int, int, int, char**, int)", K::User, C::Copy, Y},
    {Y, "void k_get_rows_float<__half, float>(__half const*, int const*, float*, long, long, long, long, long, long, long, long, long, long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long)", K::User, C::Copy, Y},
    {Y, "void rms_norm_f32<1024, false, false>(float const*, float*, int, long, long, long, float, float const*, long, long, long, uint3, uint3, uint3, uint3, float const*, long, long, long, uint3, uint3, uint3, uint3)", K::User, C::Norm, Y},
    {Y, "void flash_attn_ext_f16<128, 128, 4, 2, 2, 1, false, false>(char const*, char const*, char const*, char const*, char const*, int const*, float*, float2*, float, float, float, float, float, unsigned int, float, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int, long, int, int, long, int, int, int, int, int, long)", K::User, C::Attention, Y},
    // ---- vLLM quantization, triton_kernels' MoE matmul
    {Y, "void vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, c10::BFloat16 const*, float const*, long)", K::User, C::Quantize, Y},
    {Y, "void vllm::dynamic_per_token_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, float*, c10::BFloat16 const*, float const*, int)", K::User, C::Quantize, Y},
    {N, "_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1_swiglu", K::Triton, C::Gemm, Y},
    {N, "_quantize_mxfp8_fn", K::Triton, C::Quantize, Y},
    // ---- NCCL
    {Y, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", K::Nccl, C::Collective, N},
    {Y, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", K::Nccl, C::Collective, N},
    // ---- cub / thrust, other CUDA libraries
    {Y, "void cub::CUB_200200_900_NS::DeviceReduceKernel<cub::CUB_200200_900_NS::DeviceReducePolicy<float, int, cub::CUB_200200_900_NS::Sum>::Policy600, float*, float*, int, cub::CUB_200200_900_NS::Sum>(float*, float*, int, cub::CUB_200200_900_NS::GridEvenShare<int>, cub::CUB_200200_900_NS::Sum)", K::CubThrust, C::Reduce, Y},
    {Y, "void gen_sequenced<curandStateXORWOW, float2, normal_args_st, &float2 curand_normal_scaled2<curandStateXORWOW>(curandStateXORWOW*, normal_args_st), rng_config<curandStateXORWOW, (curandOrdering)101> >(curandStateXORWOW*, float2*, unsigned long, unsigned long, normal_args_st)", K::CudaLibrary, C::Other, N},
    // ---- the user's own C++ kernels
    {Y, "square(float*, int)", K::User, C::Other, Y},
    {Y, "void my_ns::layernorm_forward<float>(float*, float const*, int)", K::User, C::Norm, Y},
    {Y, "void vector_add<float>(float const*, float const*, float*, int)", K::User, C::Elementwise, Y},
    {Y, "void memset_kernel(int*, int, unsigned long)", K::User, C::Memset, Y},
    {Y, "void copy_kernel<float>(float*, float const*, unsigned long)", K::User, C::Copy, Y},
};

TEST(NamesClassify, RealKernelNames) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    Classification got = run(c);
    EXPECT_EQ(to_string(got.kind), to_string(c.kind));
    EXPECT_EQ(to_string(got.category), to_string(c.category));
    EXPECT_EQ(got.source_expected, c.source_expected);
  }
}

TEST(NamesClassify, WorksOnRealMangledNames) {
  const std::string m = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_";
  Classification c = classify(m, demangle(m));
  EXPECT_EQ(c.kind, Kind::Aten);
  EXPECT_EQ(c.category, Category::Elementwise);
  c = classify("_Z6squarePfi", demangle("_Z6squarePfi"));
  EXPECT_EQ(c.kind, Kind::User);
  EXPECT_TRUE(c.source_expected);
}

TEST(NamesClassify, AmbiguityOfPlainNamesIsResolvedAsTriton) {
  // An extern "C" CUDA kernel and a @triton.jit kernel both appear as plain symbols;
  // the name cannot tell them apart (docs/profile.md says so). A name that is not even an
  // identifier (PTX from another front end) is not called Triton.
  EXPECT_EQ(classify("my_extern_c_kernel", "my_extern_c_kernel").kind, Kind::Triton);
  EXPECT_EQ(classify("weird.name$1", "weird.name$1").kind, Kind::User);
}

// Names come from captures, which are untrusted: a 64 KiB demangled name overflowed the stack
// inside std::regex (issue 38's fuzz run: 16 KiB passed, 32 KiB crashed).
TEST(NamesClassify, HugeNamesAreClassifiedWithoutOverflowingTheStack) {
  const std::string ident = "k" + std::string(65539, 'a');
  EXPECT_EQ(classify(ident, ident).kind, Kind::Triton);  // a plain identifier, as any other
  const std::string cxx = "void cutlass::Kernel2<" + std::string(65539, 'x') + ">(int)";
  EXPECT_EQ(classify("_Z3fooi", cxx).kind, Kind::Cutlass);
}

TEST(NamesClassify, EveryEnumHasAName) {
  for (int k = 0; k <= static_cast<int>(Kind::User); ++k) EXPECT_NE(to_string(static_cast<Kind>(k)), "?");
  for (int c = 0; c <= static_cast<int>(Category::Other); ++c) EXPECT_NE(to_string(static_cast<Category>(c)), "?");
}

// locate_rules.toml writes kinds as to_string spells them; kind_from_string reads them back.
TEST(NamesClassify, KindNamesReadBack) {
  for (int k = 0; k <= static_cast<int>(Kind::User); ++k) {
    const auto kind = static_cast<Kind>(k);
    EXPECT_EQ(kind_from_string(to_string(kind)), kind) << to_string(kind);
  }
  EXPECT_EQ(kind_from_string("flash-attn"), Kind::FlashAttention);
  EXPECT_EQ(kind_from_string("cub/thrust"), Kind::CubThrust);
  EXPECT_FALSE(kind_from_string("cuBLAS").has_value());
  EXPECT_FALSE(kind_from_string("").has_value());
  EXPECT_FALSE(kind_from_string("?").has_value());
}

}  // namespace
