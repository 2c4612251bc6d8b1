// `extract --rank/--device` when nothing was captured: the message names the ranks the
// job's processes had, or the devices the kernel ran on. Fed with event lines, no GPU.
#include <gtest/gtest.h>

#include "extract/diagnose.hpp"
#include "format/events.hpp"

using namespace kerncap;
using namespace kerncap::extract;
namespace events = kerncap::format::events;

namespace {

nlohmann::json start_of(int pid, int64_t rank, const char* source, bool selected) {
  auto j = events::start("capture");
  events::add_rank(j, rank, source, selected);
  j["pid"] = pid;
  return j;
}

}  // namespace

TEST(ExtractRank, NoProcessHadTheRank) {
  events::Log log;
  events::add_line(log, start_of(10, 0, "RANK", false).dump());
  events::add_line(log, start_of(11, 1, "RANK", false).dump());
  events::add_line(log, start_of(12, -1, "", false).dump());
  std::string m = diagnose({"gemm", 0, 4, -1}, log, {true, 0});
  EXPECT_NE(m.find("no process of the application is rank 4"), std::string::npos) << m;
  EXPECT_NE(m.find("0 (RANK), 1 (RANK)"), std::string::npos) << m;
  EXPECT_NE(m.find("1 process(es) could not tell their rank"), std::string::npos) << m;
}

TEST(ExtractRank, TheChosenRankSawNoMatchIsTheUsualMessage) {
  events::Log log;
  events::add_line(log, start_of(10, 0, "RANK", false).dump());
  events::add_line(log, start_of(11, 1, "RANK", true).dump());
  events::add_line(log, R"x({"event":"seen","pid":11,"mangled":"_Z3addv","demangled":"add()","matches":false})x");
  std::string m = diagnose({"gemm", 0, 1, -1}, log, {true, 0});
  EXPECT_NE(m.find("no launched kernel matches 'gemm'"), std::string::npos) << m;
}

TEST(ExtractRank, LaunchesOnOtherDevicesAreExplained) {
  events::Log log;
  events::add_line(log, start_of(10, -1, "", true).dump());
  events::add_line(log, R"({"event":"ignored","pid":10,"mangled":"_Z4gemmv","why":"on CUDA device 0, not --device 1"})");
  std::string m = diagnose({"gemm", 0, -1, 1}, log, {true, 0});
  EXPECT_NE(m.find("--device 1 counts only launches on CUDA device 1"), std::string::npos) << m;
}
