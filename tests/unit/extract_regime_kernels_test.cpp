// Which kernels `extract --regimes --kernel ... --top N` takes from the profiled run's records
// (extract/regime_run.hpp regime_kernels): each pattern's kernel with the most GPU time, then
// the heaviest kernels not named yet, each once; device-launched and benchmark launches do not
// count; what the user should hear is in the notes.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "extract/regime_run.hpp"

using namespace kerncap;
using namespace kerncap::extract;

namespace {

// One process; `launches` as (name, GPU ns, device-launched, benchmark).
format::ProcessRecords records(const std::vector<std::tuple<std::string, uint64_t, bool, bool>>& launches) {
  format::ProcessRecords p;
  p.info.pid = 7;
  for (const auto& [name, ns, device, bench] : launches) {
    auto it = std::find(p.names.begin(), p.names.end(), name);
    if (it == p.names.end()) it = p.names.insert(p.names.end(), name);
    format::KernelRecord k;
    k.name_id = static_cast<uint32_t>(it - p.names.begin());
    k.start_ns = 1000;
    k.end_ns = 1000 + ns;
    k.device_launched = device;
    k.benchmark = bench;
    p.kernels.push_back(k);
  }
  return p;
}

const std::vector<format::ProcessRecords> kModel = {records({{"_Z8rms_normPfi", 300, false, false},
                                                             {"_Z4gemmPfS_", 900, false, false},
                                                             {"_Z4gemmPfS_", 900, false, false},
                                                             {"_Z9rms_norm2Pf", 50, false, false},
                                                             {"_Z4ropePf", 400, false, false},
                                                             {"_Z5childPf", 5000, true, false},
                                                             {"_Z5tunedPf", 7000, false, true}})};

}  // namespace

TEST(RegimeKernelChoice, PatternsFirstThenTheHeaviestNotNamedYet) {
  RegimeSelection sel;
  sel.patterns = {"rms_norm"};
  sel.top = 2;
  std::vector<std::string> notes;
  const auto k = regime_kernels(kModel, sel, false, notes);
  // rms_norm's best match (300 ns over rms_norm2's 50), then gemm (1800) and rope (400); the
  // device-launched child and the autotuner's benchmark launches never count.
  EXPECT_EQ(k, (std::vector<std::string>{"_Z8rms_normPfi", "_Z4gemmPfS_", "_Z4ropePf"}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("also matches 1 other kernel(s) (rms_norm2(float*))"), std::string::npos) << notes[0];
}

TEST(RegimeKernelChoice, AKernelNamedTwiceIsTakenOnceAndTopSaysWhenItRunsShort) {
  RegimeSelection sel;
  sel.patterns = {"gemm", "_Z4gemm"};
  sel.top = 10;
  std::vector<std::string> notes;
  const auto k = regime_kernels(kModel, sel, false, notes);
  EXPECT_EQ(k, (std::vector<std::string>{"_Z4gemmPfS_", "_Z4ropePf", "_Z8rms_normPfi", "_Z9rms_norm2Pf"}));
  bool twice = false, short_top = false;
  for (const auto& n : notes) {
    twice |= n.find("names gemm(float*, float*) again; its regimes are taken once") != std::string::npos;
    short_top |= n.find("--top 10: the application launched only 3 other kernel(s)") != std::string::npos;
  }
  EXPECT_TRUE(twice);
  EXPECT_TRUE(short_top);
}

TEST(RegimeKernelChoice, APatternNothingMatchesAndABadRegexAreErrors) {
  RegimeSelection sel;
  sel.patterns = {"softmax"};
  std::vector<std::string> notes;
  try {
    regime_kernels(kModel, sel, false, notes);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("no launched kernel matches 'softmax'"), std::string::npos) << e.what();
  }
  sel.patterns = {"gemm("};
  try {
    regime_kernels(kModel, sel, true, notes);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
}
