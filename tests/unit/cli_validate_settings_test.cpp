// What `kerncap validate` checks: OUT/kerncap.toml, then the flags over it.
#include <gtest/gtest.h>

#include "cli/validate_settings.hpp"
#include "common/error.hpp"

namespace kerncap::cli {
namespace {

lint::KerncapConfig config(const char* toml) { return lint::parse_kerncap_toml(toml, "OUT/kerncap.toml"); }

TEST(ValidateSettings, NothingWithoutAFileOrFlags) {
  const auto s = resolve_validate_settings({}, std::nullopt, "OUT/kerncap.toml");
  EXPECT_FALSE(s.invariants.any());
  EXPECT_TRUE(s.tolerances.empty());
  EXPECT_TRUE(s.region_tolerances.empty());
  EXPECT_FALSE(s.min_speedup);
}

TEST(ValidateSettings, TheFileGivesTolerancesInvariantsAndSpeedup) {
  const auto s = resolve_validate_settings(
      {}, config("[tolerances]\nfp32 = { atol = 0.5 }\n[invariants]\nno_nan = true\nmust_write = true\n"
                 "[timing]\nmin_speedup = 1.1\n"),
      "OUT/kerncap.toml");
  ASSERT_EQ(s.tolerances.count(compare::DType::F32), 1u);
  EXPECT_EQ(s.tolerances.at(compare::DType::F32).atol, 0.5);
  EXPECT_EQ(s.invariants, (compare::Invariants{.no_nan = true, .must_write = true}));
  EXPECT_EQ(s.invariants_from, "OUT/kerncap.toml");
  EXPECT_EQ(s.min_speedup, 1.1);
  EXPECT_EQ(s.min_speedup_from, "OUT/kerncap.toml");
}

TEST(ValidateSettings, FlagsOverrideTheFile) {
  const auto file = config("[invariants]\nno_nan = true\n[timing]\nmin_speedup = 2.0\n");
  ValidateFlags f;
  f.invariants = "non_negative";
  f.min_speedup = 1.05;
  f.tolerances = {"3:atol=0.1"};
  auto s = resolve_validate_settings(f, file, "OUT/kerncap.toml");
  EXPECT_EQ(s.invariants, (compare::Invariants{.non_negative = true}));
  EXPECT_EQ(s.invariants_from, "--invariant");
  EXPECT_EQ(s.min_speedup, 1.05);
  EXPECT_EQ(s.min_speedup_from, "--min-speedup");
  ASSERT_EQ(s.region_tolerances.size(), 1u);
  EXPECT_EQ(s.region_tolerances[0].region, 3u);

  ValidateFlags off;
  off.no_invariants = true;
  s = resolve_validate_settings(off, file, "OUT/kerncap.toml");
  EXPECT_FALSE(s.invariants.any());
  EXPECT_EQ(s.invariants_from, "--no-invariants");
}

TEST(ValidateSettings, ContradictionsAndBadValuesAreUsageErrors) {
  auto refused = [](const ValidateFlags& f) {
    try {
      resolve_validate_settings(f, std::nullopt, "OUT/kerncap.toml");
    } catch (const Error& e) {
      return e.kind() == ErrorKind::Usage;
    }
    return false;
  };
  ValidateFlags both;
  both.invariants = "no_nan";
  both.no_invariants = true;
  EXPECT_TRUE(refused(both));
  ValidateFlags bad_name;
  bad_name.invariants = "no_nans";
  EXPECT_TRUE(refused(bad_name));
  ValidateFlags zero;
  zero.min_speedup = 0;
  EXPECT_TRUE(refused(zero));
  ValidateFlags bad_tol;
  bad_tol.tolerances = {"atol=1"};
  EXPECT_TRUE(refused(bad_tol));
}

}  // namespace
}  // namespace kerncap::cli
