#include <gtest/gtest.h>

#include "profile/names.hpp"

using namespace kerncap::profile;

namespace {
const char* kAtenAdd = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_";
const char* kSoftmaxWarp = "_ZN12_GLOBAL__N_120softmax_warp_forwardIfffLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib";
}  // namespace

TEST(ProfileNames, DemanglesCxxAndPassesOthersThrough) {
  EXPECT_EQ(demangle("_Z6squarePfi"), "square(float*, int)");
  EXPECT_EQ(demangle(kAtenAdd),
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, "
            "3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)");
  EXPECT_EQ(demangle("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(demangle("_Zgarbage"), "_Zgarbage");  // not demanglable: kept as is
  EXPECT_TRUE(is_mangled("_Z6squarePfi"));
  EXPECT_FALSE(is_mangled("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT"));
}

TEST(ProfileNames, FunctionNameDropsReturnTypeTemplatesAndParameters) {
  EXPECT_EQ(function_name("square(float*, int)"), "square");
  EXPECT_EQ(function_name(demangle(kAtenAdd)), "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(function_name(demangle(kSoftmaxWarp)), "{anon}::softmax_warp_forward");
  EXPECT_EQ(function_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*)"),
            "at::native::{anon}::cunn_SoftMaxForward");
  EXPECT_EQ(function_name("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNT"), "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNT");
}

TEST(ProfileNames, ShortenKeepsWhatMattersAndFitsTheWidth) {
  EXPECT_EQ(shorten("square(float*, int)", 80), "square");
  EXPECT_EQ(shorten(demangle(kAtenAdd), 200), "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char*, 3ul>>");
  // Too wide: nested template arguments collapse first, then everything inside <>.
  EXPECT_EQ(shorten(demangle(kAtenAdd), 70), "vectorized_elementwise_kernel<4, CUDAFunctor_add<...>, array<...>>");
  EXPECT_EQ(shorten(demangle(kAtenAdd), 40), "vectorized_elementwise_kernel<...>");
  EXPECT_EQ(shorten(demangle(kAtenAdd), 20), "vectorized_elemen...");
  EXPECT_EQ(shorten(demangle(kSoftmaxWarp), 200), "softmax_warp_forward<float, float, float, 10, false, false>");
  // Parameter lists with lambdas inside are removed as one balanced group.
  EXPECT_EQ(shorten("void at::native::elementwise_kernel<128, 2, f<{lambda(int)#1}>>(int, g<{lambda(int)#1}>)", 200),
            "elementwise_kernel<128, 2, f<{lambda(int)#1}>>");
  // Namespace prefixes go only where they start a name.
  EXPECT_EQ(shorten("void cutlass::Kernel2<cutlass::gemm::x>(cutlass::gemm::x::Params)", 200),
            "cutlass::Kernel2<cutlass::gemm::x>");
  EXPECT_EQ(shorten("void cub::CUB_200200_900_NS::DeviceReduceKernel<int>(int)", 200), "cub::DeviceReduceKernel<int>");
  for (size_t w : {10u, 30u, 50u}) EXPECT_LE(shorten(demangle(kAtenAdd), w).size(), w);
}
