// The comparison spec: parsing, checks against the capture, tolerances from the one table,
// and how a region is cut into typed pieces.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "replay/compare_spec.hpp"

namespace kerncap::replay {
namespace {

format::Manifest two_regions() {
  format::Manifest m;
  m.regions = {{0, format::MemKind::Device, 0x1000, 0x100, "mem/0.bin", 0, ""},
               {1, format::MemKind::Device, 0x8000, 0x40, "mem/1.bin", 0, ""}};
  return m;
}

nlohmann::json J(const char* text) { return nlohmann::json::parse(text); }

std::string refusal(const nlohmann::json& j) {
  try {
    parse_spec(j, two_regions(), "spec");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    return e.what();
  }
  return "";
}

TEST(CompareSpec, TolerancesComeFromTheDefaultTable) {
  auto s = parse_spec(J(R"({"spans": [{"base": "0x1010", "size": 16, "dtype": "fp32"}]})"), two_regions(), "spec");
  ASSERT_EQ(s.spans.size(), 1u);
  EXPECT_EQ(s.spans[0].dtype, compare::DType::F32);
  EXPECT_DOUBLE_EQ(s.spans[0].tol.rtol, compare::default_tolerance(compare::DType::F32).rtol);
  EXPECT_DOUBLE_EQ(s.spans[0].tol.atol, compare::default_tolerance(compare::DType::F32).atol);
  EXPECT_EQ(s.dtype, compare::DType::Bytes);
  EXPECT_EQ(s.tol.atol, 0.0);
  auto t = resolve_tolerance(compare::DType::BF16, 0.5, std::nullopt);
  EXPECT_EQ(t.atol, 0.5);
  EXPECT_DOUBLE_EQ(t.rtol, compare::default_tolerance(compare::DType::BF16).rtol);
}

TEST(CompareSpec, BadSpecsAreRefusedWithTheField) {
  EXPECT_NE(refusal(J(R"({"dtype": "float128"})")).find("unknown dtype 'float128'"), std::string::npos);
  EXPECT_NE(refusal(J(R"({"atol": -1})")).find("atol must be a finite number >= 0"), std::string::npos);
  EXPECT_NE(refusal(J(R"({"spans": [{"base": 4344, "size": 16}]})")).find("lies in no captured region"),
            std::string::npos);
  EXPECT_NE(refusal(J(R"({"spans": [{"base": "zz", "size": 4}]})")).find("spans[0]"), std::string::npos);
  EXPECT_NE(refusal(J(R"({"spans": 3})")).find("must be an array"), std::string::npos);
  EXPECT_NE(refusal(nlohmann::json::array()).find("JSON object"), std::string::npos);
  EXPECT_NE(refusal(J(R"({"spans": [{"base": 4096, "size": -4}]})")).find("unsigned \"size\""), std::string::npos);
}

TEST(CompareSpec, RegionsAreCutIntoTypedPieces) {
  // Overlapping spans: the first (lowest base) wins.
  auto s = parse_spec(J(R"({"spans": [{"base": 4160, "size": 32, "dtype": "fp16"},
                                       {"base": 4096, "size": 16, "dtype": "fp32"},
                                       {"base": 4168, "size": 64, "dtype": "i32"}]})"),
                      two_regions(), "spec");
  auto p = pieces_of(two_regions().regions[0], s);
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0].begin, 0u);
  EXPECT_EQ(p[0].end, 0x10u);
  EXPECT_EQ(p[0].dtype, compare::DType::F32);
  EXPECT_EQ(p[1].dtype, compare::DType::Bytes);
  EXPECT_EQ(p[1].end, 0x40u);
  EXPECT_EQ(p[2].dtype, compare::DType::F16);
  EXPECT_EQ(p[2].end, 0x60u);
  EXPECT_EQ(p[3].dtype, compare::DType::I32);
  EXPECT_EQ(p[3].begin, 0x60u);
  EXPECT_EQ(p[3].end, 0x88u);
  EXPECT_EQ(p[4].end, 0x100u);
  auto q = pieces_of(two_regions().regions[1], s);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].end, 0x40u);
}

}  // namespace
}  // namespace kerncap::replay

TEST(CompareSpecTable, OnlyEntriesOtherThanTheDefaultsChangeThem) {
  using kerncap::compare::DType;
  kerncap::replay::ToleranceTable table;
  EXPECT_FALSE(kerncap::replay::changes_defaults(table));
  // The kerncap.toml extract writes lists the default tolerances: nothing changes.
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16}) table[t] = kerncap::compare::default_tolerance(t);
  EXPECT_FALSE(kerncap::replay::changes_defaults(table));
  table[DType::F16].atol *= 2;
  EXPECT_TRUE(kerncap::replay::changes_defaults(table));
}
