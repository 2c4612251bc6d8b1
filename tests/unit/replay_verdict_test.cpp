// What the result line says: how strong a PASS is, and when the kernel was nondeterministic.
#include <gtest/gtest.h>

#include "replay/validate.hpp"

namespace kerncap::replay {
namespace {

RegionVerdict region(uint32_t id, uint64_t written, uint64_t mismatches, double abs_error = 0) {
  RegionVerdict r;
  r.id = id;
  r.size = 4096;
  r.written = written;
  r.result.bytes = 4096;
  r.result.mismatches = mismatches;
  r.result.differing_bytes = abs_error > 0 || mismatches ? 8 : 0;
  r.result.max_abs_error = abs_error;
  return r;
}

TEST(VerdictLine, APassOverUnchangedBytesIsCalledWeak) {
  Verdict v;
  v.regions = {region(0, 0, 0), region(1, 0, 0)};
  EXPECT_TRUE(v.pass());
  EXPECT_EQ(v.line().rfind("Result: PASS (weak:", 0), 0u) << v.line();
  EXPECT_EQ(v.to_json()["strength"], "none: the launch changed no byte");
}

TEST(VerdictLine, APassOverWrittenBytesSaysHowMuch) {
  Verdict v;
  v.regions = {region(0, 1024, 0), region(1, 0, 0)};
  EXPECT_EQ(v.line(), "Result: PASS (byte-exact, 2 of 2 regions identical; the launch wrote 1.0 KiB in 1 regions)");
}

TEST(VerdictLine, NondeterministicKernelsSaySoWithTheError) {
  Verdict v;
  v.regions = {region(0, 1024, 0, 2.5e-7)};
  v.nondeterministic = {0};
  EXPECT_NE(v.line().find("nondeterministic kernel"), std::string::npos) << v.line();
  EXPECT_NE(v.line().find("max abs error 2.5e-07"), std::string::npos) << v.line();
  EXPECT_NE(v.line().find("within tolerance"), std::string::npos) << v.line();
  v.regions = {region(0, 1024, 3, 1.0)};
  EXPECT_EQ(v.line().rfind("Result: FAIL (nondeterministic kernel", 0), 0u) << v.line();
}

}  // namespace
}  // namespace kerncap::replay
