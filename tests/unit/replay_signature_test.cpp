// Element types from a kernel's signature, mapped onto the captured regions.
#include <gtest/gtest.h>

#include <cstring>

#include "replay/determinism.hpp"
#include "replay/signature.hpp"

namespace kerncap::replay {
namespace {
using compare::DType;

TEST(Signature, PointeeTypes) {
  EXPECT_EQ(pointee_dtype("float*"), DType::F32);
  EXPECT_EQ(pointee_dtype("const __half *__restrict__"), DType::F16);
  EXPECT_EQ(pointee_dtype("__nv_bfloat16 const*"), DType::BF16);
  EXPECT_EQ(pointee_dtype("unsigned int*"), DType::U32);
  EXPECT_EQ(pointee_dtype("double2*"), DType::F64);
  EXPECT_FALSE(pointee_dtype("float"));
  EXPECT_FALSE(pointee_dtype("float**"));
  EXPECT_FALSE(pointee_dtype("Particle*"));
  EXPECT_FALSE(pointee_dtype("int"));
}

TEST(Signature, TensorDescriptorsByValue) {
  EXPECT_EQ(struct_element_dtype("at::cuda::detail::TensorInfo<float, unsigned int>"), DType::F32);
  EXPECT_EQ(struct_element_dtype("at::cuda::detail::TensorInfo<float const, unsigned int>"), DType::F32);
  EXPECT_EQ(struct_element_dtype("at::cuda::detail::TensorInfo<long const, unsigned int>"), DType::I64);
  EXPECT_EQ(struct_element_dtype("at::GenericPackedTensorAccessor<c10::Half, 2ul, at::RestrictPtrTraits, int>"),
            DType::F16);
  EXPECT_EQ(struct_element_dtype("Acc<c10::BFloat16>"), DType::BF16);
  EXPECT_FALSE(struct_element_dtype("at::cuda::detail::TensorInfo<float, unsigned int>*"));
  EXPECT_FALSE(struct_element_dtype("at::native::ReduceAdd const&"));
  EXPECT_FALSE(struct_element_dtype("Particles"));
  EXPECT_FALSE(struct_element_dtype("Pair<Particles, float>"));
  EXPECT_FALSE(struct_element_dtype("Broken<float"));
}

// PyTorch's index_add_: the destination and source arrive inside TensorInfo structs.
TEST(Signature, PointerWordsInsideDescriptorsTypeTheirRegions) {
  format::Manifest m;
  m.mangled_name = "_Z5indexv";
  m.demangled_name =
      "void indexFunc<float>(at::cuda::detail::TensorInfo<float, unsigned int>, "
      "at::cuda::detail::TensorInfo<long const, unsigned int>, int)";
  m.params = {{0, 24}, {24, 24}, {48, 4}};
  m.regions = {{0, format::MemKind::Device, 0x10000, 0x1000, "mem/0.bin", 0, ""},
               {1, format::MemKind::Device, 0x20000, 0x800, "mem/1.bin", 0, ""}};
  std::vector<uint8_t> params(52, 0);
  const uint64_t dst = 0x10040, idx = 0x20000, size_word = 0x100;  // a size is not a pointer
  std::memcpy(params.data(), &dst, 8);
  std::memcpy(params.data() + 8, &size_word, 8);
  std::memcpy(params.data() + 24, &idx, 8);
  auto spans = signature_spans(m, params);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].base, 0x10040u);
  EXPECT_EQ(spans[0].dtype, DType::F32);
  EXPECT_EQ(spans[1].base, 0x20000u);
  EXPECT_EQ(spans[1].dtype, DType::I64);
}

format::Manifest saxpy(std::vector<uint8_t>& params) {
  format::Manifest m;
  m.mangled_name = "_Z5saxpyPKfPfif";
  m.demangled_name = "saxpy(float const*, float*, int, float)";
  m.params = {{0, 8}, {8, 8}, {16, 4}, {20, 4}};
  m.regions = {{0, format::MemKind::Device, 0x10000, 0x1000, "mem/0.bin", 0, ""},
               {1, format::MemKind::Device, 0x20000, 0x800, "mem/1.bin", 0, ""}};
  params.assign(24, 0);
  const uint64_t x = 0x10000, y = 0x20100;
  std::memcpy(params.data(), &x, 8);
  std::memcpy(params.data() + 8, &y, 8);
  return m;
}

TEST(Signature, PointersTypeTheirRegionsFromWhereTheyPoint) {
  std::vector<uint8_t> params;
  auto m = saxpy(params);
  auto spans = signature_spans(m, params);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].base, 0x10000u);
  EXPECT_EQ(spans[0].size, 0x1000u);
  EXPECT_EQ(spans[0].dtype, DType::F32);
  EXPECT_EQ(spans[1].base, 0x20100u);
  EXPECT_EQ(spans[1].size, 0x700u);
  EXPECT_DOUBLE_EQ(spans[1].tol.rtol, compare::default_tolerance(DType::F32).rtol);
}

// A file-static kernel's device name carries nvcc's prefix; a capture made before kerncap
// knew it recorded the name undemangled. Both type their regions as any C++ kernel.
TEST(Signature, StaticPrefixedNamesTypeTheirRegions) {
  std::vector<uint8_t> params;
  auto m = saxpy(params);
  m.mangled_name = "__nv_static_43__17a6f8c2_12_saxpy_cu_e6b6d8e5__Z5saxpyPKfPfif";
  m.demangled_name = m.mangled_name;
  auto spans = signature_spans(m, params);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].dtype, DType::F32);
  m.demangled_name = "saxpy(float const*, float*, int, float)";
  EXPECT_EQ(signature_spans(m, params).size(), 2u);
}

TEST(Signature, NothingWhenTheSignatureDoesNotFitTheSlots) {
  std::vector<uint8_t> params;
  auto m = saxpy(params);
  m.params.pop_back();
  EXPECT_TRUE(signature_spans(m, params).empty());
  m = saxpy(params);
  m.mangled_name = m.demangled_name = "triton_poi_fused_add_0";
  EXPECT_TRUE(signature_spans(m, params).empty());
}

TEST(Signature, TolerantSpecTypesOnlyTheNondeterministicRegions) {
  std::vector<uint8_t> params;
  auto m = saxpy(params);
  CompareSpec base{.source = "default"};
  auto spec = tolerant_spec(base, signature_spans(m, params), {1}, m);
  ASSERT_EQ(spec.spans.size(), 1u);
  EXPECT_EQ(spec.spans[0].base, 0x20100u);
  auto pieces = pieces_of(m.regions[1], spec);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].dtype, DType::Bytes);
  EXPECT_EQ(pieces[1].dtype, DType::F32);
  EXPECT_NE(spec.source.find("nondeterministic"), std::string::npos);
}

}  // namespace
}  // namespace kerncap::replay

namespace kerncap::replay {
namespace {

// A reordering float sum: the spread the kernel showed against itself widens the float spans
// of that region only, and only upwards.
TEST(Spread, WidensFloatSpansOfSpreadRegions) {
  format::Manifest m;
  m.regions = {{0, format::MemKind::Device, 0x10000, 0x1000, "mem/0.bin", 0, ""},
               {1, format::MemKind::Device, 0x20000, 0x800, "mem/1.bin", 0, ""}};
  CompareSpec spec;
  spec.source = "default";
  spec.spans = {{0x10000, 0x100, DType::F32, compare::default_tolerance(DType::F32)},
                {0x10100, 0x100, DType::I32, {}},
                {0x20000, 0x100, DType::F32, compare::default_tolerance(DType::F32)}};
  const auto out = widen_by_spread(spec, {{0, 2e-5}}, m);
  EXPECT_DOUBLE_EQ(out.spans[0].tol.atol, 8e-5);
  EXPECT_DOUBLE_EQ(out.spans[0].tol.rtol, compare::default_tolerance(DType::F32).rtol);
  EXPECT_DOUBLE_EQ(out.spans[1].tol.atol, 0);
  EXPECT_DOUBLE_EQ(out.spans[2].tol.atol, compare::default_tolerance(DType::F32).atol);
  EXPECT_NE(out.source.find("spread"), std::string::npos);
  // A spread below the default changes nothing.
  const auto same = widen_by_spread(spec, {{0, 1e-9}}, m);
  EXPECT_DOUBLE_EQ(same.spans[0].tol.atol, compare::default_tolerance(DType::F32).atol);
  EXPECT_EQ(same.source, "default");
}

}  // namespace
}  // namespace kerncap::replay
