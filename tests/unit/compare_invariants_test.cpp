// Invariants of written values: NaN/Inf/negative counts per dtype with the first index,
// not-applicable notes, must_write, and the list parser.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "compare/invariants.hpp"

namespace kerncap::compare {
namespace {

template <typename T>
std::vector<uint8_t> raw(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

ValueCounts scan(DType t, const std::vector<uint8_t>& data, uint64_t begin = 0) {
  ValueScanner s(t, begin);
  s.feed(data.data(), data.size(), 0);
  return s.counts();
}

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInff = std::numeric_limits<float>::infinity();

TEST(ValueScanner, Fp32CountsNaNInfAndNegativesWithTheFirstIndex) {
  const auto c = scan(DType::F32, raw<float>({1.f, -2.f, kNaNf, kInff, -kInff, 0.f, -0.f, -kNaNf, -3.f}));
  EXPECT_EQ(c.elements, 9u);
  EXPECT_EQ(c.nan, 2u);
  EXPECT_EQ(c.first_nan, 2u);
  EXPECT_EQ(c.inf, 2u);
  EXPECT_EQ(c.first_inf, 3u);
  // -2, -Inf, -3: negative zero is not below zero, a NaN with its sign bit set is a NaN.
  EXPECT_EQ(c.negative, 3u);
  EXPECT_EQ(c.first_negative, 1u);
}

TEST(ValueScanner, ChunksInAnyOrderKeepTheSmallestFirstIndex) {
  const auto data = raw<double>({1, 2, 3, -1, 5, 6, -7, 8});
  ValueScanner s(DType::F64, 0);
  s.feed(data.data() + 32, 32, 32);  // elements 4..7: -7 at 6
  s.feed(data.data(), 32, 0);        // elements 0..3: -1 at 3
  EXPECT_EQ(s.counts().negative, 2u);
  EXPECT_EQ(s.counts().first_negative, 3u);
  EXPECT_EQ(s.counts().elements, 8u);
}

TEST(ValueScanner, HalfBf16AndFp8DecodeTheirBits) {
  // fp16: 1.0, -2.0, +Inf, NaN
  auto h = scan(DType::F16, raw<uint16_t>({0x3c00, 0xc000, 0x7c00, 0x7e00}));
  EXPECT_EQ(h.negative, 1u);
  EXPECT_EQ(h.inf, 1u);
  EXPECT_EQ(h.nan, 1u);
  EXPECT_EQ(h.first_nan, 3u);
  // bf16: -1.0, NaN, -Inf
  auto b = scan(DType::BF16, raw<uint16_t>({0xbf80, 0x7fc0, 0xff80}));
  EXPECT_EQ(b.negative, 2u);
  EXPECT_EQ(b.nan, 1u);
  EXPECT_EQ(b.inf, 1u);
  // e4m3: 0x7f is NaN, no infinities; 0xb8 = -1.0
  auto e = scan(DType::F8E4M3, raw<uint8_t>({0x38, 0x7f, 0xb8, 0x7e}));
  EXPECT_EQ(e.nan, 1u);
  EXPECT_EQ(e.inf, 0u);
  EXPECT_EQ(e.negative, 1u);
  EXPECT_EQ(e.first_negative, 2u);
}

TEST(ValueScanner, SignedIntegersHaveNegativesUnsignedAndBytesNothing) {
  auto i = scan(DType::I32, raw<int32_t>({0, 5, -1, -9}));
  EXPECT_EQ(i.negative, 2u);
  EXPECT_EQ(i.first_negative, 2u);
  auto u = scan(DType::U32, raw<uint32_t>({0xffffffffu, 1}));
  EXPECT_EQ(u.negative, 0u);
  EXPECT_EQ(u.elements, 2u);
  auto x = scan(DType::Bytes, raw<uint8_t>({0xff, 0x80}));
  EXPECT_EQ(x.negative + x.nan + x.inf, 0u);
}

TEST(ValueScanner, ATrailingPartialElementIsIgnored) {
  auto data = raw<float>({-1.f, 2.f});
  data.push_back(0xff);
  const auto c = scan(DType::F32, data);
  EXPECT_EQ(c.elements, 2u);
  EXPECT_EQ(c.negative, 1u);
}

RegionFacts facts(uint32_t id, uint64_t written, uint64_t changed, std::vector<ValueCounts> pieces = {}) {
  return {id, written, changed, std::move(pieces)};
}

TEST(CheckInvariants, OneViolationPerInvariantAndPieceWithItsFirstIndex) {
  auto p = scan(DType::F32, raw<float>({1.f, kNaNf, -1.f, kNaNf}), 0x40);
  const auto rep = check_invariants({.no_nan = true, .no_inf = true, .non_negative = true},
                                    {facts(2, 16, 16, {p}), facts(3, 0, 0)});
  ASSERT_EQ(rep.violations.size(), 2u);
  EXPECT_FALSE(rep.pass());
  const Violation& nan = rep.violations[0];
  EXPECT_EQ(nan.invariant, "no_nan");
  EXPECT_EQ(nan.region, 2u);
  EXPECT_EQ(nan.count, 2u);
  EXPECT_EQ(nan.first_index, 1u);
  EXPECT_EQ(nan.first_offset, 0x44u);
  EXPECT_EQ(nan.message,
            "no_nan: region 2 (fp32 at +0x40): 2 NaN of 4 written element(s), first at element 1 (byte +0x44)");
  EXPECT_EQ(rep.violations[1].invariant, "non_negative");
  EXPECT_EQ(rep.violations[1].first_offset, 0x48u);
  EXPECT_EQ(rep.line(), "Invariants: FAIL (2 violation(s) of no_nan, no_inf, non_negative)");
}

TEST(CheckInvariants, RegionsTheLaunchDidNotWriteAreNotJudged) {
  auto p = scan(DType::F32, raw<float>({kNaNf}));
  const auto rep = check_invariants({.no_nan = true}, {facts(0, 0, 0, {p}), facts(1, 4, 4)});
  EXPECT_TRUE(rep.pass());
  EXPECT_EQ(rep.line(), "Invariants: PASS (no_nan; 1 written region(s))");
}

TEST(CheckInvariants, BytesTheReplayMustWriteAreJudgedWhereTheApplicationRewroteEqualBytes) {
  // A benchmark loop's later launch: the application changed nothing, but strong validation
  // poisoned the kernel's outputs, so what the replay wrote there is the candidate's.
  auto p = scan(DType::F32, raw<float>({1.f, kNaNf}));
  RegionFacts f = facts(4, 0, 0, {p});
  f.known_written = 8;
  const auto rep = check_invariants({.no_nan = true, .must_write = true}, {f});
  ASSERT_EQ(rep.violations.size(), 2u);  // the NaN, and must_write: the launch changed nothing
  EXPECT_EQ(rep.violations[0].invariant, "no_nan");
  EXPECT_EQ(rep.violations[0].region, 4u);
  EXPECT_EQ(rep.violations[1].invariant, "must_write");
  EXPECT_FALSE(rep.violations[1].region.has_value());
  RegionFacts clean = facts(4, 0, 0, {scan(DType::F32, raw<float>({1.f, 2.f}))});
  clean.known_written = 8;
  EXPECT_EQ(check_invariants({.no_nan = true}, {clean}).line(), "Invariants: PASS (no_nan; 1 written region(s))");
}

TEST(CheckInvariants, UntypedAndUnsignedPiecesSayTheCheckDoesNotApply) {
  auto bytes = scan(DType::Bytes, raw<uint8_t>({0xff, 0xff}));
  auto u8 = scan(DType::U8, raw<uint8_t>({0xff}), 8);
  auto e4 = scan(DType::F8E4M3, raw<uint8_t>({0x38}), 16);
  const auto rep = check_invariants({.no_nan = true, .no_inf = true, .non_negative = true},
                                    {facts(1, 32, 32, {bytes, u8, e4})});
  EXPECT_TRUE(rep.pass());
  ASSERT_EQ(rep.notes.size(), 3u);
  EXPECT_NE(rep.notes[0].find("region 1 (bytes at +0x0): no_nan, no_inf, non_negative not applicable to bytes (no "
                              "element type known"),
            std::string::npos)
      << rep.notes[0];
  EXPECT_NE(rep.notes[1].find("no_nan, no_inf, non_negative not applicable to u8"), std::string::npos)
      << rep.notes[1];
  EXPECT_NE(rep.notes[2].find("no_inf not applicable to fp8e4m3"), std::string::npos) << rep.notes[2];
}

TEST(CheckInvariants, MustWriteNeedsAChangedByteInEveryWrittenRegion) {
  const auto rep = check_invariants({.must_write = true}, {facts(0, 64, 3), facts(1, 128, 0), facts(2, 0, 0)});
  ASSERT_EQ(rep.violations.size(), 1u);
  EXPECT_EQ(rep.violations[0].region, 1u);
  EXPECT_EQ(rep.violations[0].message,
            "must_write: region 1: the application's launch changed 128 byte(s) here and the replay changed none of "
            "them");
}

TEST(CheckInvariants, MustWriteOnACaptureThatWroteNothingSaysItProvesNothing) {
  const auto rep = check_invariants({.must_write = true}, {facts(0, 0, 0), facts(1, 0, 0)});
  ASSERT_EQ(rep.violations.size(), 1u);
  EXPECT_FALSE(rep.violations[0].region);
  EXPECT_NE(rep.violations[0].message.find("proves nothing"), std::string::npos);
  EXPECT_NE(rep.violations[0].message.find("--dispatch"), std::string::npos);
}

TEST(CheckInvariants, NothingEnabledPasses) {
  const auto rep = check_invariants({}, {facts(0, 0, 0)});
  EXPECT_TRUE(rep.pass());
  EXPECT_EQ(rep.line(), "Invariants: PASS (none; 0 written region(s))");
}

TEST(ElementRanges, WholeElementsTouchingARunEachOnce) {
  using R = std::vector<std::pair<uint64_t, uint64_t>>;
  // fp32 piece at 0x10..0x50: runs [0x12,0x13) and [0x15,0x19) touch elements 0, 1, 2; the
  // second run starts inside element 1 and ends inside element 2: [0x10, 0x1c), one range.
  EXPECT_EQ(element_ranges(0x10, 0x50, 4, R{{0x12, 0x13}, {0x15, 0x19}}), (R{{0x10, 0x1c}}));
  // Two runs inside the same element give it once.
  EXPECT_EQ(element_ranges(0, 16, 4, R{{1, 2}, {3, 4}}), (R{{0, 4}}));
  // Runs outside the piece are ignored, ones crossing its edges clipped.
  EXPECT_EQ(element_ranges(0x10, 0x20, 8, R{{0, 4}, {0x0c, 0x12}, {0x1f, 0x40}}), (R{{0x10, 0x20}}));
  EXPECT_EQ(element_ranges(0, 0x100, 2, R{{0x10, 0x11}, {0x80, 0x84}}), (R{{0x10, 0x12}, {0x80, 0x84}}));
  // A piece ending in a partial element keeps it (the scanner ignores it).
  EXPECT_EQ(element_ranges(0, 10, 4, R{{9, 10}}), (R{{8, 10}}));
  EXPECT_TRUE(element_ranges(0, 16, 4, R{}).empty());
}

TEST(InvariantList, ParsesNamesAndRefusesUnknownOnes) {
  EXPECT_EQ(parse_invariant_list("no_nan, must_write"), (Invariants{.no_nan = true, .must_write = true}));
  EXPECT_EQ(parse_invariant_list("no_inf,non_negative,"), (Invariants{.no_inf = true, .non_negative = true}));
  EXPECT_FALSE(parse_invariant_list("").any());
  try {
    parse_invariant_list("no_nan,positive");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("positive"), std::string::npos);
  }
  EXPECT_EQ(to_string(Invariants{.no_nan = true, .non_negative = true}), "no_nan, non_negative");
}

}  // namespace
}  // namespace kerncap::compare
