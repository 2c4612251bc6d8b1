// The one judge's policy: kerncap.toml then the caller's overrides, the same from flags and
// from kc_evaluate's JSON options (how validate hands them to a server), and the spec a
// variant and the captured image are compared with.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.hpp"
#include "replay/determinism.hpp"
#include "replay/judge.hpp"

namespace kerncap::replay {
namespace {
using compare::DType;

format::KerncapConfig config(const char* toml) { return format::parse_kerncap_toml(toml, "OUT/kerncap.toml"); }

format::Manifest two_regions() {
  format::Manifest m;
  m.regions = {{0, format::MemKind::Device, 0x1000, 0x100, "mem/0.bin", 0, ""},
               {1, format::MemKind::Device, 0x8000, 0x40, "mem/1.bin", 0, ""}};
  return m;
}

// A capture in a directory without OUT/compare.json: the default spec is byte-exact.
format::Capture capture() {
  format::Capture c;
  c.dir = std::filesystem::path(::testing::TempDir()) / "kerncap-judge-test" / "capture";
  c.manifest = two_regions();
  return c;
}

// The kernel's signature: an fp32 pointer into region 0 (region 1 untyped).
std::vector<TypedSpan> signature() { return {{0x1000, 0x100, DType::F32, {}}}; }

JudgePolicy resolve(const JudgeOverrides& o, const std::optional<format::KerncapConfig>& c = std::nullopt) {
  return resolve_policy(o, c, "OUT/kerncap.toml", two_regions());
}

TEST(Judge, NothingWithoutAFileOrOverrides) {
  const JudgePolicy p = resolve({});
  EXPECT_FALSE(p.invariants.any());
  EXPECT_TRUE(p.tolerances.empty());
  EXPECT_TRUE(p.region_tolerances.empty());
  EXPECT_EQ(p.min_speedup, 0);
  EXPECT_FALSE(p.forced);
  EXPECT_TRUE(p.check_determinism);
  EXPECT_FALSE(p.exact);
}

TEST(Judge, TheFileGivesTolerancesInvariantsAndSpeedup) {
  const JudgePolicy p = resolve({}, config("[tolerances]\nfp32 = { atol = 0.5 }\n[invariants]\nno_nan = true\n"
                                           "must_write = true\n[timing]\nmin_speedup = 1.1\n"));
  ASSERT_EQ(p.tolerances.count(DType::F32), 1u);
  EXPECT_EQ(p.tolerances.at(DType::F32).atol, 0.5);
  EXPECT_EQ(p.tolerances_from, "OUT/kerncap.toml");
  EXPECT_EQ(p.invariants, (compare::Invariants{.no_nan = true, .must_write = true}));
  EXPECT_EQ(p.invariants_from, "OUT/kerncap.toml");
  EXPECT_EQ(p.min_speedup, 1.1);
  EXPECT_EQ(p.min_speedup_from, "OUT/kerncap.toml");
}

TEST(Judge, OverridesWinOverTheFile) {
  const auto file = config("[invariants]\nno_nan = true\n[timing]\nmin_speedup = 2.0\n");
  JudgeOverrides o;
  o.invariants = "non_negative";
  o.min_speedup = 1.05;
  o.tolerances = {"1:atol=0.1,dtype=fp32"};
  JudgePolicy p = resolve(o, file);
  EXPECT_EQ(p.invariants, (compare::Invariants{.non_negative = true}));
  EXPECT_EQ(p.invariants_from, "--invariant");
  EXPECT_EQ(p.min_speedup, 1.05);
  EXPECT_EQ(p.min_speedup_from, "--min-speedup");
  ASSERT_EQ(p.region_tolerances.size(), 1u);
  EXPECT_EQ(p.region_tolerances[0].region, 1u);

  JudgeOverrides off;
  off.no_invariants = true;
  p = resolve(off, file);
  EXPECT_FALSE(p.invariants.any());
  EXPECT_EQ(p.invariants_from, "--no-invariants");
}

TEST(Judge, ContradictionsAndBadValuesAreUsageErrors) {
  auto refused = [](const JudgeOverrides& o) {
    try {
      resolve(o);
    } catch (const Error& e) {
      return e.kind() == ErrorKind::Usage;
    }
    return false;
  };
  JudgeOverrides both;
  both.invariants = "no_nan";
  both.no_invariants = true;
  EXPECT_TRUE(refused(both));
  JudgeOverrides bad_name;
  bad_name.invariants = "no_nans";
  EXPECT_TRUE(refused(bad_name));
  JudgeOverrides zero;
  zero.min_speedup = 0;
  EXPECT_TRUE(refused(zero));
  JudgeOverrides bad_tol;
  bad_tol.tolerances = {"atol=1"};
  EXPECT_TRUE(refused(bad_tol));
  JudgeOverrides dtype;
  dtype.dtype = "float128";
  EXPECT_TRUE(refused(dtype));
}

// validate's flags travel to a server as JSON: the policy read back is the same.
TEST(Judge, OverridesSurviveJson) {
  JudgeOverrides o;
  o.dtype = "fp32";
  o.atol = 1e-3;
  o.exact = true;
  o.no_determinism = true;
  o.invariants = "no_nan,must_write";
  o.tolerances = {"0:atol=0.5"};
  o.min_speedup = 1.2;
  o.fuzz = 7;
  o.seed = 9;
  const JudgeOverrides back = JudgeOverrides::from_json(o.to_json());
  EXPECT_EQ(resolve(back).to_json(), resolve(o).to_json());
  EXPECT_EQ(back.to_json(), o.to_json());
  EXPECT_EQ(JudgeOverrides{}.to_json(), nlohmann::json::object());  // defaults say nothing
}

TEST(Judge, WrongJsonTypesAreInputErrors) {
  for (const char* text : {R"({"exact": "yes"})", R"({"tolerance": "0:atol=1"})", R"({"min_speedup": "fast"})",
                           R"([1, 2])"}) {
    try {
      JudgeOverrides::from_json(nlohmann::json::parse(text));
      ADD_FAILURE() << text << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << text;
    }
  }
  try {
    JudgeOverrides::from_json(nlohmann::json::parse(R"({"fuzz": -1})"));
    ADD_FAILURE() << "fuzz -1 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
}

// A variant's typed regions compare within tolerance; the captured image's replay stays exact.
TEST(Judge, AVariantComparesTypedRegionsWithinTolerance) {
  const JudgePolicy p = resolve({});
  const CompareSpec captured = first_spec(p, capture(), signature(), false);
  EXPECT_TRUE(captured.spans.empty());
  EXPECT_EQ(captured.dtype, DType::Bytes);

  const CompareSpec variant = first_spec(p, capture(), signature(), true);
  ASSERT_EQ(variant.spans.size(), 1u);
  EXPECT_EQ(variant.spans[0].dtype, DType::F32);
  EXPECT_DOUBLE_EQ(variant.spans[0].tol.rtol, compare::default_tolerance(DType::F32).rtol);
  EXPECT_NE(variant.source.find("a variant, within tolerance"), std::string::npos) << variant.source;
  EXPECT_EQ(variant.dtype, DType::Bytes);  // the untyped region stays exact
}

TEST(Judge, KerncapTomlTolerancesApplyToAVariantWithoutFlags) {
  const JudgePolicy p = resolve({}, config("[tolerances]\nfp32 = { atol = 0.01, rtol = 0.01 }\n"));
  const CompareSpec variant = first_spec(p, capture(), signature(), true);
  ASSERT_EQ(variant.spans.size(), 1u);
  EXPECT_EQ(variant.spans[0].tol.atol, 0.01);
  EXPECT_EQ(variant.spans[0].tol.rtol, 0.01);
}

TEST(Judge, ExactAndForcedSpecsAreUsedAsGiven) {
  JudgeOverrides exact;
  exact.exact = true;
  EXPECT_TRUE(first_spec(resolve(exact), capture(), signature(), true).spans.empty());

  JudgeOverrides forced;
  forced.dtype = "fp16";
  const JudgePolicy p = resolve(forced);
  ASSERT_TRUE(p.forced);
  const CompareSpec s = first_spec(p, capture(), signature(), true);
  EXPECT_EQ(s.dtype, DType::F16);
  EXPECT_TRUE(s.spans.empty());
  EXPECT_EQ(s.source, "command line");
}

TEST(Judge, RegionTolerancesComeLast) {
  JudgeOverrides o;
  o.tolerances = {"0:atol=0.25"};
  const CompareSpec s = first_spec(resolve(o), capture(), signature(), true);
  ASSERT_FALSE(s.spans.empty());
  EXPECT_EQ(s.spans[0].tol.atol, 0.25);
}

TEST(Judge, TheNondeterministicSpecIsWidenedByTheSpread) {
  const JudgePolicy p = resolve({});
  const CompareSpec first = first_spec(p, capture(), signature(), false);
  const CompareSpec s = nondeterministic_spec(p, first, signature(), {0}, {{0u, 0.5}}, two_regions());
  ASSERT_FALSE(s.spans.empty());
  EXPECT_EQ(s.spans[0].dtype, DType::F32);
  EXPECT_GE(s.spans[0].tol.atol, 0.5 * kSpreadFactor);
}

// Types from SASS (an extern "C" kernel: no signature) are used like the signature's, and the
// spec's source says where they came from.
TEST(Judge, SassTypesServeAsTheSignaturesAndSaySo) {
  const JudgePolicy p = resolve({});
  const std::vector<TypedSpan> sass = {{0x8000, 0x40, DType::F64, compare::default_tolerance(DType::F64), "sass"}};
  const CompareSpec first = first_spec(p, capture(), sass, false);
  const CompareSpec s = nondeterministic_spec(p, first, sass, {1}, {}, two_regions());
  ASSERT_EQ(s.spans.size(), 1u);
  EXPECT_EQ(s.spans[0].dtype, DType::F64);
  EXPECT_EQ(s.spans[0].source, "sass");
  EXPECT_NE(s.source.find("sass types (nondeterministic kernel)"), std::string::npos) << s.source;
  // No type from either (seen on an H200: CuPy's scatter_add said "+ signature types").
  const CompareSpec none = nondeterministic_spec(p, first_spec(p, capture(), {}, false), {}, {1}, {}, two_regions());
  EXPECT_NE(none.source.find("+ no element types (nondeterministic kernel)"), std::string::npos) << none.source;
  std::vector<TypedSpan> both = {{0x1000, 0x100, DType::F32, compare::default_tolerance(DType::F32), "signature"}};
  both.push_back({0x8000, 0x40, DType::F64, compare::default_tolerance(DType::F64), "sass"});
  const CompareSpec v = first_spec(p, capture(), both, true);
  EXPECT_NE(v.source.find("signature and sass types (a variant, within tolerance)"), std::string::npos) << v.source;
}

// Float atomics make every float region the kernel writes nondeterministic, whether or not two
// replays happened to agree there (issue 33: a shared-memory double atomicAdd whose rows the
// two replays agreed on, then compared byte for byte: FAIL).
TEST(Judge, FloatAtomicsMakeEveryWrittenFloatRegionNondeterministic) {
  const format::Manifest m = two_regions();
  const std::vector<TypedSpan> types = {{0x8000, 0x40, DType::F64, compare::default_tolerance(DType::F64), "sass"}};
  EXPECT_TRUE(nondeterministic_ids({}, false, types, {0, 1}, m).empty());
  EXPECT_EQ(nondeterministic_ids({}, true, types, {0, 1}, m), (std::vector<uint32_t>{1}));
  EXPECT_TRUE(nondeterministic_ids({}, true, types, {0}, m).empty());  // region 1 not written
  EXPECT_EQ(nondeterministic_ids({0}, true, types, {1}, m), (std::vector<uint32_t>{0, 1}));
  // An integer region stays out even with float atomics.
  const std::vector<TypedSpan> ints = {{0x8000, 0x40, DType::I32, compare::default_tolerance(DType::I32), "sass"}};
  EXPECT_TRUE(nondeterministic_ids({}, true, ints, {1}, m).empty());

  EXPECT_EQ(nondeterministic_cause("REDG.E.ADD.F64.RN.STRONG.GPU", 0),
            "float atomics in its code (REDG.E.ADD.F64.RN.STRONG.GPU), though two replays of the captured image agreed");
  EXPECT_EQ(nondeterministic_cause("", 2), "two replays of the captured image differ in 2 region(s)");
  EXPECT_EQ(nondeterministic_cause("ATOMS.CAST.SPIN.64", 1),
            "float atomics in its code (ATOMS.CAST.SPIN.64); two replays of the captured image differ in 1 region(s)");
}

TEST(Judge, ThePolicyDocumentSaysWhereEachRuleCameFrom) {
  const nlohmann::json j = resolve({}, config("[invariants]\nno_nan = true\n")).to_json();
  EXPECT_EQ(j.at("invariants"), "no_nan");
  EXPECT_EQ(j.at("invariants_from"), "OUT/kerncap.toml");
  EXPECT_EQ(j.at("forced_spec"), nullptr);
  EXPECT_EQ(j.at("exact"), false);
}

}  // namespace
}  // namespace kerncap::replay
