#include <gtest/gtest.h>

#include "names/demangle.hpp"

using namespace kerncap::names;

namespace {
const char* kAtenAdd = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_";
const char* kSoftmaxWarp = "_ZN12_GLOBAL__N_120softmax_warp_forwardIfffLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib";
}  // namespace

TEST(NamesDemangle, DemanglesCxxAndPassesOthersThrough) {
  EXPECT_EQ(demangle("_Z6squarePfi"), "square(float*, int)");
  EXPECT_EQ(demangle(kAtenAdd),
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, "
            "3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)");
  EXPECT_EQ(demangle("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(demangle("_Zgarbage"), "_Zgarbage");  // not demanglable: kept as is
  EXPECT_EQ(demangle("_Z9vectorAddPKfS0_Pfi"), "vectorAdd(float const*, float const*, float*, int)");
  EXPECT_EQ(demangle(""), "");
  EXPECT_TRUE(is_mangled("_Z6squarePfi"));
  EXPECT_FALSE(is_mangled("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT"));
}

// nvcc's device name for a file-static kernel: an Itanium name behind a prefix (seen on a
// kernel launched from a CUDA graph); its types must be read as any C++ kernel's.
TEST(NamesDemangle, StaticPrefixedNamesDemangle) {
  const char* name = "__nv_static_51__9d2c1e44_14_graph_apps_cu_6f1a2b3c__Z13accumulateRowPdPKdi";
  EXPECT_EQ(itanium_part(name), "_Z13accumulateRowPdPKdi");
  EXPECT_TRUE(is_mangled(name));
  EXPECT_EQ(demangle(name), "accumulateRow(double*, double const*, int)");
  // A prefix with nothing that demangles after it stays as it is.
  EXPECT_EQ(demangle("__nv_static_51__9d2c__Zgarbage"), "__nv_static_51__9d2c__Zgarbage");
  EXPECT_FALSE(is_mangled("__nv_static_51__9d2c__Zgarbage"));
  EXPECT_EQ(itanium_part("kernel_nv_static"), "");
  // A name from an untrusted capture full of "__Z": a few candidates, then given up.
  std::string hostile = "__nv_static_1";
  for (int i = 0; i < 20000; ++i) hostile += "__Zx";
  EXPECT_EQ(demangle(hostile), hostile);
}

TEST(NamesDemangle, FunctionNameDropsReturnTypeTemplatesAndParameters) {
  EXPECT_EQ(function_name("square(float*, int)"), "square");
  EXPECT_EQ(function_name(demangle(kAtenAdd)), "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(function_name(demangle(kSoftmaxWarp)), "{anon}::softmax_warp_forward");
  EXPECT_EQ(function_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*)"),
            "at::native::{anon}::cunn_SoftMaxForward");
  EXPECT_EQ(function_name("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNT"), "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNT");
}
