// What the result line says: how strong a PASS is, and when the kernel was nondeterministic;
// per-piece summaries when typed spans cut a region.
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
  // One piece: fp32 (from the signature) where an error is given, bytes otherwise.
  const compare::DType t = abs_error > 0 ? compare::DType::F32 : compare::DType::Bytes;
  r.pieces.push_back({{0, 4096, t, compare::default_tolerance(t), abs_error > 0 ? "signature" : ""}, r.result});
  return r;
}

TEST(VerdictLine, APassOverUnchangedBytesIsCalledWeak) {
  Verdict v;
  v.regions = {region(0, 0, 0), region(1, 0, 0)};
  EXPECT_TRUE(v.pass());
  EXPECT_EQ(v.line().rfind("Result: PASS (weak:", 0), 0u) << v.line();
  EXPECT_EQ(v.to_json()["strength"], "none: the launch changed no byte");
}

// HeCBench lulesh's calcVelocityForNodes at its 4th launch: an in-place update (every byte it
// writes it reads first, so none can be poisoned) whose results equalled its inputs. A kernel
// that returns at once passed "strongly" before; nothing was proven, and the line says so.
TEST(VerdictLine, AFootprintThatPoisonsNothingOverUnchangedBytesProvesNothing) {
  Verdict v;
  v.regions = {region(0, 0, 0), region(1, 0, 0)};
  v.strong = true;
  v.footprint_written = 862500;
  v.footprint_regions = 3;
  v.poisoned = 0;
  EXPECT_TRUE(v.unproven());
  EXPECT_EQ(v.line().rfind("Result: PASS (weak: the kernel writes 842.3 KiB in 3 region(s) but reads all of it first", 0),
            0u)
      << v.line();
  EXPECT_EQ(v.line().find("strong"), std::string::npos) << v.line();
  EXPECT_EQ(v.to_json()["strength"], "none: the launch changed no byte and the kernel reads every byte it writes");
  // Bytes the launch changed are proven by the comparison itself; poisoned bytes by the poison.
  v.regions = {region(0, 64, 0), region(1, 0, 0)};
  EXPECT_FALSE(v.unproven());
  EXPECT_EQ(v.line().rfind("Result: PASS (strong:", 0), 0u) << v.line();
  EXPECT_EQ(v.to_json()["strength"], "strong");
  v.regions = {region(0, 0, 0), region(1, 0, 0)};
  v.poisoned = 4096;
  EXPECT_FALSE(v.unproven());
  EXPECT_EQ(v.line().rfind("Result: PASS (strong:", 0), 0u) << v.line();
}

// A kernel that writes only through a surface into a CUDA array: the footprint (global
// accesses) saw no write, nothing was poisoned; "strong" with 0 B proven never appears.
TEST(VerdictLine, AFootprintThatSawNoWriteIsNotStrong) {
  Verdict v;
  v.regions = {region(0, 4096, 0), region(1, 0, 0)};
  v.strong = true;
  v.footprint_written = 0;
  v.footprint_regions = 0;
  v.poisoned = 0;
  EXPECT_TRUE(v.pass());
  EXPECT_EQ(v.line().rfind("Result: PASS (weak: the footprint saw this kernel write no global memory", 0), 0u)
      << v.line();
  EXPECT_EQ(v.line().find("strong:"), std::string::npos) << v.line();
  EXPECT_EQ(v.to_json()["strength"], "weak-footprint-saw-no-write");
}

// A candidate that faulted: FAIL naming the fault, whatever its regions say.
TEST(VerdictLine, AFaultIsAFailNamingIt) {
  Verdict v;
  v.fault = "the replayed kernel failed: CUDA_ERROR_ILLEGAL_ADDRESS";
  EXPECT_FALSE(v.pass());
  EXPECT_EQ(v.line(), "Result: FAIL (the candidate faulted: the replayed kernel failed: CUDA_ERROR_ILLEGAL_ADDRESS)");
  EXPECT_EQ(v.to_json()["strength"], "none: the candidate faulted");
  EXPECT_EQ(v.to_json()["fault"], v.fault);
  EXPECT_EQ(Verdict{}.to_json()["fault"], nullptr);
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

// A nondeterministic kernel whose FAIL comes from a region the two replays agreed on (compared
// exactly): the line names that region and how it was compared, and the error it states is
// the tolerant regions', not a "max abs error 0" next to a FAIL.
TEST(VerdictLine, ANondeterministicFailNamesEachFailingRegionAndHow) {
  Verdict v;
  v.regions = {region(0, 1024, 0, 0.25), region(1, 8, 1)};
  v.nondeterministic = {0};
  const std::string line = v.line();
  EXPECT_EQ(line.rfind("Result: FAIL (nondeterministic kernel", 0), 0u) << line;
  EXPECT_NE(line.find("max abs error 0.25"), std::string::npos) << line;
  EXPECT_NE(line.find("region 1 (the two replays agreed here; compared exactly as bytes)"), std::string::npos) << line;
  EXPECT_EQ(line.find("region 0 ("), std::string::npos) << line;  // it passed
}

// Issue 33: an extern "C" kernel whose nondeterministic region has no element type was compared
// as bytes, and its FAIL read "compared within their element types' tolerance (max abs error 0,
// max rel error 0)". The line says the bytes were compared exactly and why; no error of 0.
TEST(VerdictLine, AnUntypedNondeterministicRegionIsNamedAsComparedExactly) {
  Verdict v;
  v.regions = {region(0, 8, 1)};
  v.nondeterministic = {0};
  const std::string line = v.line();
  EXPECT_EQ(line.rfind("Result: FAIL (nondeterministic kernel (two replays of the captured image differ in 1 "
                       "region(s)): 1 region(s) compared exactly as bytes: no element type known for them",
                       0),
            0u)
      << line;
  EXPECT_EQ(line.find("max abs error 0"), std::string::npos) << line;
  EXPECT_EQ(line.find("within their element types' tolerance"), std::string::npos) << line;
  EXPECT_NE(line.find("region 0 (nondeterministic; compared exactly as bytes: no element type known (no signature "
                      "types, none from SASS))"),
            std::string::npos)
      << line;
}

// A kernel with float atomics in its SASS: the cause is its code, each failing region names its
// type, where the type came from and the tolerance it was compared within.
TEST(VerdictLine, FloatAtomicsNameTheCauseAndEachRegionsTypeSource) {
  Verdict v;
  RegionVerdict r = region(2, 8, 1, 0.5);
  r.pieces.front().piece = {0, 4096, compare::DType::F64, {4e-12, 1e-12, false}, "sass"};
  v.regions = {r, region(3, 16, 0, 1e-13)};
  v.nondeterministic = {2, 3};
  v.nondeterministic_cause = "float atomics in its code (ATOMS.CAST.SPIN.64), though two replays of the captured "
                             "image agreed";
  const std::string line = v.line();
  EXPECT_EQ(line.rfind("Result: FAIL (nondeterministic kernel (float atomics in its code (ATOMS.CAST.SPIN.64), "
                       "though two replays of the captured image agreed): 2 region(s) compared within their element "
                       "types' tolerance (max abs error 0.5,",
                       0),
            0u)
      << line;
  EXPECT_NE(line.find("region 2 (nondeterministic; fp64 from sass within atol 4e-12, rtol 1e-12): "), std::string::npos)
      << line;
  const nlohmann::json j = v.to_json();
  EXPECT_EQ(j["nondeterministic_cause"], v.nondeterministic_cause);
  EXPECT_EQ(j["regions"][0]["pieces"][0]["type_source"], "sass");
  EXPECT_EQ(j["regions"][1]["pieces"][0]["type_source"], "signature");
}

TEST(VerdictJson, BytesHaveNoTypeSourceAndADeterministicKernelNoCause) {
  Verdict v;
  v.regions = {region(0, 8, 0)};
  const nlohmann::json j = v.to_json();
  EXPECT_TRUE(j["nondeterministic_cause"].is_null());
  EXPECT_TRUE(j["regions"][0]["pieces"][0]["type_source"].is_null());
}

compare::Result result(compare::DType t, uint64_t bytes, uint64_t bad, std::optional<uint64_t> first = {}) {
  compare::Result r;
  r.dtype = t;
  r.bytes = bytes;
  r.elements = bytes / compare::dtype_size(t);
  r.mismatches = bad;
  r.differing_bytes = bad * compare::dtype_size(t);
  r.first_bad_offset = first;
  return r;
}

TEST(VerdictPieces, TypedPiecesAreReportedOneByOne) {
  RegionVerdict rv{3, "device", 0x1000, 0x100, 0x40, {}, {}};
  rv.pieces.push_back({{0, 0x40, compare::DType::Bytes, {}}, result(compare::DType::Bytes, 0x40, 0)});
  rv.pieces.push_back({{0x40, 0x100, compare::DType::F32, compare::default_tolerance(compare::DType::F32)},
                       result(compare::DType::F32, 0xc0, 2, 0x48)});
  for (const auto& p : rv.pieces) compare::merge(rv.result, p.result);
  EXPECT_FALSE(rv.result.pass());
  EXPECT_EQ(rv.result.first_bad_offset, 0x48u);
  const std::string s = rv.summary();
  EXPECT_NE(s.find("fp32 at +0x40"), std::string::npos) << s;
  EXPECT_NE(s.find("2 of 48 fp32 elements differ, first at byte offset 72"), std::string::npos) << s;

  Verdict v;
  v.spec_source = "OUT/compare.json";
  v.regions.push_back(rv);
  EXPECT_FALSE(v.pass());
  EXPECT_EQ(v.line(), "Result: FAIL (1 of 1 regions differ)");
  const auto j = v.to_json();
  EXPECT_EQ(j["result"], "FAIL");
  EXPECT_EQ(j["spec"], "OUT/compare.json");
  ASSERT_EQ(j["regions"][0]["pieces"].size(), 2u);
  EXPECT_EQ(j["regions"][0]["pieces"][1]["dtype"], "fp32");
  EXPECT_EQ(j["regions"][0]["pieces"][1]["offset"], 0x40);
  EXPECT_EQ(j["regions"][0]["pieces"][1]["first_bad_offset"], 0x48);
  EXPECT_EQ(j["regions"][0]["pieces"][0]["pass"], true);
}

TEST(VerdictPieces, OnePieceKeepsThePlainSummary) {
  RegionVerdict rv{0, "device", 0x1000, 16, 16, {}, {}};
  rv.pieces.push_back({{0, 16, compare::DType::Bytes, {}}, result(compare::DType::Bytes, 16, 0)});
  rv.result = rv.pieces[0].result;
  EXPECT_EQ(rv.summary(), "byte-exact");
  Verdict v;
  v.regions.push_back(rv);
  EXPECT_TRUE(v.pass());
  EXPECT_NE(v.line().find("Result: PASS (byte-exact"), std::string::npos) << v.line();
}

}  // namespace
}  // namespace kerncap::replay
