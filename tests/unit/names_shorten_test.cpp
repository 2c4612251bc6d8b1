#include <gtest/gtest.h>

#include "names/shorten.hpp"

using namespace kerncap::names;

namespace {
// As the demangler spells them (shortening starts from the demangled form).
const char* kAtenAdd =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
    "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)";
const char* kSoftmaxWarp =
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>"
    "(float*, float const*, int, int, int, bool const*, int, bool)";
}  // namespace

TEST(NamesShorten, ShortenKeepsWhatMattersAndFitsTheWidth) {
  EXPECT_EQ(shorten("square(float*, int)", 80), "square");
  EXPECT_EQ(shorten(kAtenAdd, 200), "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char*, 3ul>>");
  // Too wide: nested template arguments collapse first, then everything inside <>.
  EXPECT_EQ(shorten(kAtenAdd, 70), "vectorized_elementwise_kernel<4, CUDAFunctor_add<...>, array<...>>");
  EXPECT_EQ(shorten(kAtenAdd, 40), "vectorized_elementwise_kernel<...>");
  EXPECT_EQ(shorten(kAtenAdd, 20), "vectorized_elemen...");
  EXPECT_EQ(shorten(kSoftmaxWarp, 200), "softmax_warp_forward<float, float, float, 10, false, false>");
  // Parameter lists with lambdas inside are removed as one balanced group.
  EXPECT_EQ(shorten("void at::native::elementwise_kernel<128, 2, f<{lambda(int)#1}>>(int, g<{lambda(int)#1}>)", 200),
            "elementwise_kernel<128, 2, f<{lambda(int)#1}>>");
  // Namespace prefixes go only where they start a name.
  EXPECT_EQ(shorten("void cutlass::Kernel2<cutlass::gemm::x>(cutlass::gemm::x::Params)", 200),
            "cutlass::Kernel2<cutlass::gemm::x>");
  EXPECT_EQ(shorten("void cub::CUB_200200_900_NS::DeviceReduceKernel<int>(int)", 200), "cub::DeviceReduceKernel<int>");
  for (size_t w : {10u, 30u, 50u}) EXPECT_LE(shorten(kAtenAdd, w).size(), w);
}
