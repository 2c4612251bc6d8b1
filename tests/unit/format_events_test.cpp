// The events file: every kind has a name, builders and the reader agree, and a library of
// another protocol is visible to the launcher.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "format/events.hpp"
#include "format/protocol.hpp"

using namespace kerncap::format;
using namespace kerncap::format::events;

TEST(FormatEvents, TenKindsEachWithAName) {
  std::set<std::string_view> names;
  for (Kind k : kAllKinds) {
    EXPECT_TRUE(names.insert(name(k)).second);
    EXPECT_EQ(kind_from_name(name(k)), k);
  }
  EXPECT_EQ(names.size(), 10u);
  EXPECT_FALSE(kind_from_name("nonsense"));
}

TEST(FormatEvents, StartCarriesToolAndProtocol) {
  auto j = start("capture");
  EXPECT_EQ(j["event"], "start");
  EXPECT_EQ(j["protocol"], kProtocolVersion);
  EXPECT_EQ(j["tool"], KERNCAP_VERSION);
  Log log;
  j["pid"] = 42;
  add_line(log, j.dump());
  ASSERT_EQ(log.starts.size(), 1u);
  EXPECT_EQ(log.starts[0].pid, 42);
  EXPECT_EQ(log.starts[0].mode, "capture");
  EXPECT_EQ(log.starts[0].protocol, kProtocolVersion);
}

TEST(FormatEvents, StartCarriesTheRankOfEachProcess) {
  Log log;
  auto a = start("capture");
  add_rank(a, 0, "RANK", false);
  a["pid"] = 1;
  auto b = start("capture");
  add_rank(b, -1, "", false);  // no launcher variable and no slot: unknown
  b["pid"] = 2;
  add_line(log, a.dump());
  add_line(log, b.dump());
  add_line(log, R"({"event":"start","mode":"capture","pid":3,"protocol":1})");  // no --rank: selected
  ASSERT_EQ(log.starts.size(), 3u);
  EXPECT_EQ(log.starts[0].rank, 0);
  EXPECT_EQ(log.starts[0].rank_source, "RANK");
  EXPECT_FALSE(log.starts[0].selected);
  EXPECT_EQ(log.starts[1].rank, -1);
  EXPECT_FALSE(log.starts[1].selected);
  EXPECT_EQ(log.starts[2].rank, -1);
  EXPECT_TRUE(log.starts[2].selected);
}

TEST(FormatEvents, AnOldLibrarysStartHasProtocolZero) {
  Log log;
  add_line(log, R"({"event":"start","mode":"capture","pid":7})");
  ASSERT_EQ(log.starts.size(), 1u);
  EXPECT_EQ(log.starts[0].protocol, 0);
  EXPECT_EQ(log.starts[0].tool, "");
}

TEST(FormatEvents, BuildersFoldIntoTheLog) {
  Log log;
  for (const auto& j : {seen("_Z1av", "a()", true), seen("_Z1bv", "b()", false), seen("_Z1av", "a()", true),
                        ignored("_Z1av", "autotuner benchmark"), skipped("_Z1av", SkipReason::NestedGraph), graph_launch(),
                        match(0, "_Z1av"), match(1, "_Z1av"), error("boom"), captured("/o/capture", false),
                        stopping()})
    add_line(log, j.dump());
  EXPECT_EQ(log.seen, (std::vector<std::string>{"a()", "b()"}));  // distinct, first-seen order
  EXPECT_EQ(log.matches, (std::set<uint64_t>{0, 1}));
  EXPECT_EQ(log.ignored.size(), 1u);
  EXPECT_EQ(log.skipped.size(), 1u);
  EXPECT_EQ(log.errors, std::vector<std::string>{"boom"});
  EXPECT_TRUE(log.graph_launch);
  EXPECT_TRUE(log.captured);
  EXPECT_TRUE(log.stopping);
}

TEST(FormatEvents, UnlaunchedKernelsFoldDistinctAndBounded) {
  Log log;
  add_line(log, unlaunched("_Z5childPf", "child(float*)").dump());
  add_line(log, unlaunched("_Z5childPf", "child(float*)").dump());  // another process says it too
  add_line(log, nlohmann::json{{"event", "unlaunched"}, {"mangled", "plain_c_name"}}.dump());
  EXPECT_EQ(log.unlaunched, (std::vector<std::string>{"child(float*)", "plain_c_name"}));
  for (size_t i = 0; i < 2 * kMaxUnlaunched; ++i) add_line(log, unlaunched("k" + std::to_string(i), "").dump());
  EXPECT_EQ(log.unlaunched.size(), kMaxUnlaunched);
}

TEST(FormatEvents, CutLinesAndUnknownKindsAreSkipped) {
  std::istringstream in("{\"event\":\"seen\",\"mangled\":\"k\"}\n{\"event\":\"future_kind\"}\n\n{\"event\":\"mat");
  Log log;
  add_stream(log, in);
  EXPECT_EQ(log.seen, std::vector<std::string>{"k"});  // no demangled name: the mangled one
  EXPECT_EQ(log.unreadable_lines, 1u);
  EXPECT_TRUE(log.matches.empty());
}
