// KERNCAP_SWAPS and the swap report: what the launcher writes reads back, and what a stale
// or crafted value holds is refused with a reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "format/protocol.hpp"
#include "format/swaps.hpp"

namespace kerncap::format {
namespace {

TEST(Swaps, RoundTripThroughTheEnvironment) {
  std::vector<SwapSpec> in = {{"_Z1aPf", "_Z1aPf", "/x/a.cubin", true}, {"_Z1bPf", "_Z1bv2", "/x/b.cubin", false}};
  std::vector<SwapSpec> out;
  EXPECT_EQ(swaps_from_text(swaps_to_text(in), &out), "");
  EXPECT_EQ(out, in);
  Config c;
  c.mode = Mode::Profile;
  c.output = "/tmp/records";
  c.swaps = in;
  const auto env = c.to_env();
  ASSERT_TRUE(env.contains("KERNCAP_SWAPS"));
  std::vector<std::string> problems;
  const Config back = config_from_env(
      [&](std::string_view n) -> const char* {
        auto it = env.find(std::string(n));
        return it == env.end() ? nullptr : it->second.c_str();
      },
      &problems);
  EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems.front());
  EXPECT_EQ(back.swaps, in);
}

TEST(Swaps, RefusesWhatIsNotTheContract) {
  std::vector<SwapSpec> out;
  EXPECT_NE(swaps_from_text("[]", &out), "");
  EXPECT_NE(swaps_from_text(R"({"version": 2, "swaps": []})", &out).find("another version"), std::string::npos);
  EXPECT_NE(swaps_from_text(R"({"version": 1, "swaps": []})", &out), "");
  EXPECT_NE(swaps_from_text(R"({"version": 1, "swaps": [{"kernel": "k", "entry": "k", "image": "rel.cubin"}]})", &out)
                .find("absolute"),
            std::string::npos);
  EXPECT_NE(swaps_from_text(R"({"version": 1, "swaps": [{"kernel": "k", "image": "/a"}]})", &out).find("entry"),
            std::string::npos);
  EXPECT_NE(swaps_from_text(R"({"version": 1, "swaps": [{"kernel": "k", "entry": "k", "image": "/a", "apply": 1}]})", &out),
            "");
  EXPECT_NE(swaps_from_text(R"({"version": 1, "swaps": [{"kernel": "k", "entry": "k", "image": "/a"},
                                                          {"kernel": "k", "entry": "k", "image": "/b"}]})",
                            &out)
                .find("twice"),
            std::string::npos);
  EXPECT_TRUE(out.empty());
}

TEST(SwapReport, WrittenAndReadBackStrictly) {
  const auto dir = std::filesystem::temp_directory_path() / ("kerncap-swaprep-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  SwapReport r;
  r.pid = 42;
  r.kernels.push_back({"_Z1aPf", "_Z1aPf", true, 10, 9, 1, "why"});
  {
    std::ofstream(dir / swap_report_name(42)) << swap_report_json(r).dump();
  }
  const auto all = read_swap_reports(dir);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].pid, 42);
  EXPECT_EQ(all[0].kernels[0].swapped, 9u);
  EXPECT_EQ(all[0].kernels[0].graph_nodes, 1u);
  EXPECT_EQ(all[0].kernels[0].refused, "why");
  // More served than launched cannot be.
  auto j = swap_report_json(r);
  j["kernels"][0]["swapped"] = 11;
  std::ofstream(dir / swap_report_name(43)) << j.dump();
  EXPECT_THROW(read_swap_reports(dir), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kerncap::format
