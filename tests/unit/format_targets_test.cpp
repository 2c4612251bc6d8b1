// KERNCAP_TARGETS (several targets in one run): the launcher's value round-trips through
// the library's reader, malformed values are refused (the library then stays inert), and
// the events reader keeps, for one target, only the lines that concern it.
#include <gtest/gtest.h>

#include <map>

#include "format/events.hpp"
#include "format/protocol.hpp"

using namespace kerncap::format;

namespace {

Config from_map(const std::map<std::string, std::string>& env, std::vector<std::string>* problems) {
  return config_from_env(
      [&](std::string_view name) -> const char* {
        auto it = env.find(std::string(name));
        return it == env.end() ? nullptr : it->second.c_str();
      },
      problems);
}

std::string problem_of(const std::string& value) {
  std::vector<TargetSpec> out;
  return targets_from_text(value, &out);
}

}  // namespace

TEST(FormatTargets, RoundTripThroughTheLibrarysReader) {
  Config c;
  c.mode = Mode::Capture;
  c.output = "/tmp/run";
  c.targets = {{"gemm<float>", MatchKind::Regex, 3, "/tmp/run/00-gemm"},
               {"_Z3addPfS_i", MatchKind::Exact, 0, "/tmp/run/01-add"},
               {"softmax", MatchKind::Substring, 7, "/tmp/run/02-softmax"}};
  auto env = c.to_env();
  EXPECT_EQ(env.at("KERNCAP_KERNEL"), "");  // a stale value of the user's is overridden
  std::vector<std::string> problems;
  Config back = from_map(env, &problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(back.mode, Mode::Capture);  // no KERNCAP_KERNEL is needed with targets
  EXPECT_EQ(back.targets, c.targets);
  EXPECT_EQ(effective_targets(back), c.targets);
}

TEST(FormatTargets, OneTargetIsTheKernelVariables) {
  Config c;
  c.mode = Mode::Capture;
  c.output = "/o";
  c.kernel = "scale";
  c.regex = true;
  c.dispatch = 2;
  EXPECT_EQ(c.to_env().at("KERNCAP_TARGETS"), "");
  auto t = effective_targets(c);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], (TargetSpec{"scale", MatchKind::Regex, 2, "/o"}));
  EXPECT_EQ(config_for_target(c, -1).output, "/o");
}

TEST(FormatTargets, MalformedValuesAreRefused) {
  EXPECT_NE(problem_of("not json"), "");
  EXPECT_NE(problem_of("[]"), "");
  EXPECT_NE(problem_of(R"({"version":2,"targets":[{"kernel":"a","match":"substring","dispatch":0,"output":"/o"}]})"), "");
  EXPECT_NE(problem_of(R"({"version":1,"targets":[]})"), "");
  EXPECT_NE(problem_of(R"({"version":1,"targets":[{"kernel":"","match":"substring","dispatch":0,"output":"/o"}]})"), "");
  EXPECT_NE(problem_of(R"({"version":1,"targets":[{"kernel":"a","match":"glob","dispatch":0,"output":"/o"}]})"), "");
  EXPECT_NE(problem_of(R"({"version":1,"targets":[{"kernel":"a","match":"exact","dispatch":-1,"output":"/o"}]})"), "");
  EXPECT_NE(problem_of(R"({"version":1,"targets":[{"kernel":"a","match":"exact","dispatch":1.5,"output":"/o"}]})"), "");
  EXPECT_NE(problem_of(R"({"version":1,"targets":[{"kernel":"a","match":"exact","dispatch":0}]})"), "");
  EXPECT_NE(problem_of(R"({"version":1,"targets":[7]})"), "");
  std::string many = R"({"version":1,"targets":[)";
  for (size_t i = 0; i <= kMaxTargets; ++i)
    many += std::string(i ? "," : "") + R"({"kernel":"a","match":"exact","dispatch":0,"output":"/o"})";
  EXPECT_NE(problem_of(many + "]}"), "");
  // In the library: reported, and with no kernel either, capture mode is off.
  std::vector<std::string> problems;
  Config c = from_map({{"KERNCAP_MODE", "capture"}, {"KERNCAP_OUTPUT", "/o"}, {"KERNCAP_TARGETS", "{"}}, &problems);
  EXPECT_EQ(c.mode, Mode::Off);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("KERNCAP_TARGETS"), std::string::npos);
}

TEST(FormatTargets, EventsAreReadPerTarget) {
  events::Log all, first, second;
  const std::vector<std::string> lines = {
      R"j({"event":"start","mode":"capture","pid":1,"protocol":2,"tool":"x"})j",
      R"j({"event":"seen","mangled":"_Z1av","demangled":"a()","matches":true,"targets":[1],"pid":1})j",
      R"j({"event":"match","index":0,"mangled":"_Z1av","target":1,"pid":1})j",
      R"j({"event":"skipped","mangled":"_Z1bv","why":"w","reason":"unlaunched_graph","targets":[0],"pid":1})j",
      R"j({"event":"error","what":"boom","target":1,"pid":1})j",
      R"j({"event":"stopping","pid":1})j"};
  for (const auto& l : lines) {
    events::add_line(all, l);
    events::add_line(first, l, 0);
    events::add_line(second, l, 1);
  }
  EXPECT_EQ(all.matches.size(), 1u);
  EXPECT_TRUE(first.matches.empty());
  EXPECT_EQ(second.matches.size(), 1u);
  ASSERT_EQ(first.skipped.size(), 1u);
  EXPECT_EQ(first.skipped[0].reason, "unlaunched_graph");
  EXPECT_TRUE(second.skipped.empty());
  EXPECT_TRUE(first.errors.empty());
  EXPECT_EQ(second.errors.size(), 1u);
  // Seen names, the start and stopping concern every target.
  EXPECT_EQ(first.seen.size(), 1u);
  EXPECT_EQ(first.starts.size(), 1u);
  EXPECT_TRUE(first.stopping && second.stopping);
}
