// Element type names, sizes, default tolerances.
#include <gtest/gtest.h>

#include "compare/compare.hpp"

namespace kerncap::compare {
namespace {

constexpr DType kAll[] = {DType::Bytes, DType::F64,  DType::F32, DType::F16, DType::BF16,
                          DType::F8E4M3, DType::F8E5M2, DType::I8,  DType::I16, DType::I32,
                          DType::I64,   DType::U8,   DType::U16, DType::U32, DType::U64};

TEST(CompareDType, CanonicalNamesRoundTrip) {
  for (DType t : kAll) {
    auto back = dtype_from_string(to_string(t));
    ASSERT_TRUE(back) << to_string(t);
    EXPECT_EQ(*back, t) << to_string(t);
  }
  EXPECT_STREQ(to_string(DType::Bytes), "bytes");
  EXPECT_STREQ(to_string(DType::F64), "fp64");
  EXPECT_STREQ(to_string(DType::F32), "fp32");
  EXPECT_STREQ(to_string(DType::F16), "fp16");
  EXPECT_STREQ(to_string(DType::BF16), "bf16");
  EXPECT_STREQ(to_string(DType::F8E4M3), "fp8e4m3");
  EXPECT_STREQ(to_string(DType::F8E5M2), "fp8e5m2");
  EXPECT_STREQ(to_string(DType::I8), "i8");
  EXPECT_STREQ(to_string(DType::I64), "i64");
  EXPECT_STREQ(to_string(DType::U8), "u8");
  EXPECT_STREQ(to_string(DType::U64), "u64");
}

TEST(CompareDType, CommonSpellings) {
  const std::pair<const char*, DType> cases[] = {
      {"raw", DType::Bytes},          {"f64", DType::F64},          {"float64", DType::F64},
      {"double", DType::F64},         {"f32", DType::F32},          {"float32", DType::F32},
      {"float", DType::F32},          {"f16", DType::F16},          {"float16", DType::F16},
      {"half", DType::F16},           {"bfloat16", DType::BF16},    {"e4m3", DType::F8E4M3},
      {"float8_e4m3fn", DType::F8E4M3}, {"e5m2", DType::F8E5M2},    {"float8_e5m2", DType::F8E5M2},
      {"int8", DType::I8},            {"int16", DType::I16},        {"int", DType::I32},
      {"int32", DType::I32},          {"int64", DType::I64},        {"uint8", DType::U8},
      {"bool", DType::U8},            {"uint16", DType::U16},       {"uint32", DType::U32},
      {"uint64", DType::U64},         {"FP32", DType::F32},         {"torch.bfloat16", DType::BF16},
      {"np.float16", DType::F16},     {"BF16", DType::BF16},
  };
  for (const auto& [text, type] : cases) {
    auto t = dtype_from_string(text);
    ASSERT_TRUE(t) << text;
    EXPECT_EQ(*t, type) << text;
  }
}

TEST(CompareDType, UnknownSpellingsRefused) {
  for (const char* text : {"", "fp", "float128", "fp8", "i128", "torch.", "bytes "})
    EXPECT_FALSE(dtype_from_string(text)) << '"' << text << '"';
}

TEST(CompareDType, Sizes) {
  EXPECT_EQ(dtype_size(DType::Bytes), 1u);
  EXPECT_EQ(dtype_size(DType::F8E4M3), 1u);
  EXPECT_EQ(dtype_size(DType::F8E5M2), 1u);
  EXPECT_EQ(dtype_size(DType::I8), 1u);
  EXPECT_EQ(dtype_size(DType::U8), 1u);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::I16), 2u);
  EXPECT_EQ(dtype_size(DType::U16), 2u);
  EXPECT_EQ(dtype_size(DType::F32), 4u);
  EXPECT_EQ(dtype_size(DType::I32), 4u);
  EXPECT_EQ(dtype_size(DType::U32), 4u);
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(dtype_size(DType::U64), 8u);
}

TEST(CompareDType, DefaultTolerance) {
  EXPECT_DOUBLE_EQ(default_tolerance(DType::F32).rtol, 1e-5);
  EXPECT_DOUBLE_EQ(default_tolerance(DType::F32).atol, 1e-6);
  EXPECT_DOUBLE_EQ(default_tolerance(DType::F16).rtol, 1e-3);
  EXPECT_DOUBLE_EQ(default_tolerance(DType::BF16).rtol, 1e-2);
  EXPECT_DOUBLE_EQ(default_tolerance(DType::F8E4M3).rtol, 0.125);
  EXPECT_DOUBLE_EQ(default_tolerance(DType::F8E5M2).rtol, 0.25);
  EXPECT_DOUBLE_EQ(default_tolerance(DType::F64).rtol, 1e-12);
  // Looser types get looser defaults.
  EXPECT_LT(default_tolerance(DType::F64).rtol, default_tolerance(DType::F32).rtol);
  EXPECT_LT(default_tolerance(DType::F32).rtol, default_tolerance(DType::F16).rtol);
  for (DType t : {DType::Bytes, DType::I8, DType::I32, DType::U64}) {
    EXPECT_EQ(default_tolerance(t).atol, 0.0) << to_string(t);
    EXPECT_EQ(default_tolerance(t).rtol, 0.0) << to_string(t);
  }
  for (DType t : kAll) EXPECT_TRUE(default_tolerance(t).nan_equal) << to_string(t);
}

TEST(CompareDType, IsFloat) {
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2})
    EXPECT_TRUE(is_float(t)) << to_string(t);
  for (DType t : {DType::Bytes, DType::I8, DType::U16, DType::I64}) EXPECT_FALSE(is_float(t)) << to_string(t);
}

}  // namespace
}  // namespace kerncap::compare
