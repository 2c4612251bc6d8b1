// What kerncap.toml and the command line change in a validation: the per-dtype tolerance
// table, per-region tolerances, the element types the invariants read, the speed-up verdict,
// and the result line and JSON of a verdict with invariant violations.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.hpp"
#include "replay/compare_spec.hpp"
#include "replay/speedup.hpp"
#include "replay/validate.hpp"

namespace kerncap::replay {
namespace {

using compare::DType;

format::Manifest two_regions() {
  format::Manifest m;
  m.regions = {{0, format::MemKind::Device, 0x1000, 0x100, "mem/0.bin", 0, ""},
               {1, format::MemKind::Device, 0x8000, 0x40, "mem/1.bin", 0, ""}};
  return m;
}

std::string usage_refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage) << e.what();
    return e.what();
  }
  return "";
}

TEST(ToleranceTable, ReplacesTheDefaultWhereNoToleranceIsGiven) {
  const ToleranceTable table{{DType::F32, {.atol = 0.5, .rtol = 0.25}}};
  EXPECT_EQ(table_tolerance(DType::F32, table).atol, 0.5);
  EXPECT_DOUBLE_EQ(table_tolerance(DType::F16, table).atol, compare::default_tolerance(DType::F16).atol);
  const auto t = resolve_tolerance(DType::F32, std::nullopt, 0.125, table);
  EXPECT_EQ(t.atol, 0.5);    // from the table
  EXPECT_EQ(t.rtol, 0.125);  // explicit wins
  const auto spec = parse_spec(nlohmann::json::parse(R"({"spans": [{"base": "0x1010", "size": 16, "dtype": "fp32"},
      {"base": "0x1020", "size": 16, "dtype": "fp32", "atol": 0.0}]})"),
                               two_regions(), "spec", table);
  ASSERT_EQ(spec.spans.size(), 2u);
  EXPECT_EQ(spec.spans[0].tol.atol, 0.5);
  EXPECT_EQ(spec.spans[1].tol.atol, 0.0);
  EXPECT_EQ(spec.spans[1].tol.rtol, 0.25);
}

TEST(RegionTolerance, ParsesRegionKeysAndDtype) {
  auto r = parse_region_tolerance("1:atol=1e-3,rtol=0.5");
  EXPECT_EQ(r.region, 1u);
  EXPECT_EQ(r.atol, 1e-3);
  EXPECT_EQ(r.rtol, 0.5);
  EXPECT_FALSE(r.dtype);
  r = parse_region_tolerance("7:dtype=bf16");
  EXPECT_EQ(r.dtype, DType::BF16);
  for (const char* bad : {"atol=1", "x:atol=1", "1:", "1:atol", "1:atol=-1", "1:atol=nan", "1:foo=2", "1:dtype=q"})
    EXPECT_NE(usage_refusal([&] { parse_region_tolerance(bad); }), "") << bad;
}

TEST(RegionTolerance, AWholeRegionTakesTheGivenDtype) {
  const auto m = two_regions();
  CompareSpec base;
  base.source = "default";
  const auto s = with_region_tolerances(base, {parse_region_tolerance("1:dtype=fp32,atol=0.5")}, m);
  ASSERT_EQ(s.spans.size(), 1u);
  EXPECT_EQ(s.spans[0].base, 0x8000u);
  EXPECT_EQ(s.spans[0].size, 0x40u);
  EXPECT_EQ(s.spans[0].dtype, DType::F32);
  EXPECT_EQ(s.spans[0].tol.atol, 0.5);
  EXPECT_DOUBLE_EQ(s.spans[0].tol.rtol, compare::default_tolerance(DType::F32).rtol);
  EXPECT_EQ(s.source, "default + --tolerance");
  // Region 0 is untouched: one bytes piece.
  const auto p0 = pieces_of(m.regions[0], s);
  ASSERT_EQ(p0.size(), 1u);
  EXPECT_EQ(p0[0].dtype, DType::Bytes);
}

TEST(RegionTolerance, WithoutDtypeTypedPiecesKeepTheirTypeAndBytesStayExact) {
  const auto m = two_regions();
  CompareSpec base;
  base.spans = {{0x1010, 0x10, DType::F16, compare::default_tolerance(DType::F16)}};
  const auto s = with_region_tolerances(base, {parse_region_tolerance("0:rtol=0.5")}, m);
  const auto p = pieces_of(m.regions[0], s);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[1].dtype, DType::F16);
  EXPECT_EQ(p[1].tol.rtol, 0.5);
  EXPECT_DOUBLE_EQ(p[1].tol.atol, compare::default_tolerance(DType::F16).atol);
  EXPECT_EQ(p[0].dtype, DType::Bytes);
  // A region compared only as bytes needs a dtype; an unknown region is refused.
  EXPECT_NE(usage_refusal([&] { with_region_tolerances(base, {parse_region_tolerance("1:atol=1")}, m); })
                .find("dtype=fp32"),
            std::string::npos);
  EXPECT_NE(usage_refusal([&] { with_region_tolerances(base, {parse_region_tolerance("9:dtype=fp32")}, m); })
                .find("no region 9"),
            std::string::npos);
}

TEST(InvariantTyping, SpecTypesFirstThenTheSignatureInWhatIsLeft) {
  CompareSpec spec;
  spec.spans = {{0x1000, 0x40, DType::F16, {}}};
  const std::vector<TypedSpan> sig = {{0x1000, 0x100, DType::F32, {}}, {0x8000, 0x40, DType::I32, {}}};
  const auto t = invariant_typing(spec, sig);
  const auto m = two_regions();
  const auto p0 = pieces_of(m.regions[0], t);
  ASSERT_EQ(p0.size(), 2u);
  EXPECT_EQ(p0[0].dtype, DType::F16);
  EXPECT_EQ(p0[0].end, 0x40u);
  EXPECT_EQ(p0[1].dtype, DType::F32);
  EXPECT_EQ(p0[1].end, 0x100u);
  const auto p1 = pieces_of(m.regions[1], t);
  ASSERT_EQ(p1.size(), 1u);
  EXPECT_EQ(p1[0].dtype, DType::I32);
  // A forced dtype types everything: the signature is not consulted.
  CompareSpec forced;
  forced.dtype = DType::BF16;
  EXPECT_TRUE(invariant_typing(forced, sig).spans.empty());
}

TEST(Speedup, JudgedFromTheMedians) {
  Stats c, v;
  c.median = 2.0;
  v.median = 1.6;
  auto s = judge_speedup(c, v, 1.2);
  EXPECT_DOUBLE_EQ(s.speedup, 1.25);
  EXPECT_TRUE(s.pass());
  EXPECT_EQ(s.line(20).rfind("Speed-up: PASS (x1.250 >= x1.200", 0), 0u) << s.line(20);
  s = judge_speedup(c, v, 1.5);
  EXPECT_FALSE(s.pass());
  EXPECT_EQ(s.line(20).rfind("Speed-up: FAIL (x1.250 < x1.500", 0), 0u) << s.line(20);
  EXPECT_EQ(s.to_json()["pass"], false);
  // 0: measured without a threshold (a regime set's children): it passes and says so.
  s = judge_speedup(c, v, 0);
  EXPECT_TRUE(s.pass());
  EXPECT_EQ(s.line(20).rfind("Speed-up: x1.250 (no threshold asked for", 0), 0u) << s.line(20);
  EXPECT_NE(usage_refusal([&] { judge_speedup(c, v, -1); }), "");
  EXPECT_NE(usage_refusal([&] { judge_speedup(c, v, std::nan("")); }), "");
  // No samples (a timing that came back empty) is never a speed-up, even without a threshold.
  s = judge_speedup(Stats{}, v, 0);
  EXPECT_FALSE(s.measured());
  EXPECT_FALSE(s.pass());
  EXPECT_EQ(s.speedup, 0);
  EXPECT_EQ(s.line(20).rfind("Speed-up: FAIL (not measured", 0), 0u) << s.line(20);
  EXPECT_FALSE(judge_speedup(c, Stats{}, 0).pass());
}

TEST(VerdictInvariants, AViolationFailsAMatchingReplay) {
  Verdict v;
  RegionVerdict r;
  r.id = 2;
  r.size = 64;
  r.written = 64;
  r.result.bytes = 64;
  v.regions = {r};
  compare::ValueScanner scan(DType::F32, 0);
  const float vals[4] = {1.f, -1.f, 2.f, -3.f};
  scan.feed(reinterpret_cast<const uint8_t*>(vals), sizeof vals, 0);
  v.invariants = compare::check_invariants({.non_negative = true}, {{2, 64, 0, {scan.counts()}}});
  EXPECT_FALSE(v.pass());
  EXPECT_EQ(v.failing(), 0u);
  EXPECT_EQ(v.line(),
            "Result: FAIL (1 invariant violation(s) of non_negative; every region matches the application's result)");
  const auto j = v.to_json();
  EXPECT_EQ(j["result"], "FAIL");
  ASSERT_EQ(j["invariants"]["violations"].size(), 1u);
  EXPECT_EQ(j["invariants"]["violations"][0]["invariant"], "non_negative");
  EXPECT_EQ(j["invariants"]["violations"][0]["count"], 2);
  EXPECT_EQ(j["invariants"]["violations"][0]["first_index"], 1);
  EXPECT_EQ(j["invariants"]["regions"][0]["pieces"][0]["negative"], 2);
  v.invariants = compare::check_invariants({.non_negative = true}, {{2, 64, 0, {}}});
  EXPECT_TRUE(v.pass());
  EXPECT_EQ(v.to_json()["invariants"]["pass"], true);
}

}  // namespace
}  // namespace kerncap::replay
