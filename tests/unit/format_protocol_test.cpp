// The KERNCAP_* table: every variable has one row, the library's reader and the
// launcher's Config::to_env() agree, and docs/env.md is the table's own output.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

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

}  // namespace

TEST(FormatProtocol, EveryVariableHasOneRowAndAName) {
  std::set<std::string_view> names;
  std::set<Var> ids;
  for (const auto& v : env_vars()) {
    EXPECT_TRUE(v.name.starts_with("KERNCAP_")) << v.name;
    EXPECT_TRUE(names.insert(v.name).second) << "duplicate " << v.name;
    EXPECT_TRUE(ids.insert(v.id).second) << v.name;
    EXPECT_FALSE(v.meaning.empty()) << v.name;
    EXPECT_NE(v.readers, 0u) << v.name;
    EXPECT_EQ(env_var(v.id).name, v.name);
    // The library's variables, and only those, parse into and print from Config.
    EXPECT_EQ(v.parse != nullptr, (v.readers & kLibrary) != 0) << v.name;
    EXPECT_EQ(v.print != nullptr, v.parse != nullptr) << v.name;
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(Var::RunStdout) + 1);  // no Var without a row
  EXPECT_EQ(env_name(Var::Dispatch), "KERNCAP_DISPATCH");
}

TEST(FormatProtocol, ToEnvRoundTripsThroughTheLibrarysReader) {
  Config c;
  c.mode = Mode::Capture;
  c.output = "/tmp/out";
  c.kernel = "gemm<float>";
  c.regex = true;
  c.dispatch = 12;
  c.keep_running = true;
  c.verbose = 2;
  c.chunk_bytes = 65536;
  c.staging_bytes = 8u << 20;
  c.dump_images = true;
  c.rank = 3;
  c.device = 1;
  std::vector<std::string> problems;
  Config back = from_map(c.to_env(), &problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(back.verbose, 2);
  EXPECT_TRUE(back.dump_images);
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.device, 1);
}

TEST(FormatProtocol, RankAndDeviceAreAnyUnlessGivenAndBadValuesAreReported) {
  Config c;
  c.mode = Mode::Capture;
  c.output = "/o";
  c.kernel = "k";
  auto env = c.to_env();
  EXPECT_EQ(env.at("KERNCAP_RANK"), "");  // a stale rank in the user's shell is overridden
  EXPECT_EQ(env.at("KERNCAP_DEVICE"), "");
  Config back = from_map(env, nullptr);
  EXPECT_EQ(back.rank, -1);
  EXPECT_EQ(back.device, -1);
  std::vector<std::string> problems;
  back = from_map({{"KERNCAP_MODE", "capture"}, {"KERNCAP_OUTPUT", "/o"}, {"KERNCAP_KERNEL", "k"},
                   {"KERNCAP_RANK", "-1"}, {"KERNCAP_DEVICE", "gpu1"}},
                  &problems);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "KERNCAP_RANK is not a rank (a number from 0)");
  EXPECT_EQ(problems[1], "KERNCAP_DEVICE is not a CUDA device ordinal (0..1023)");
}

TEST(FormatProtocol, TunablesAtTheirDefaultsAreLeftToTheUser) {
  Config c;
  c.mode = Mode::Profile;
  c.output = "/tmp/records";
  auto env = c.to_env();
  EXPECT_EQ(env.at("KERNCAP_MODE"), "profile");
  EXPECT_EQ(env.at("KERNCAP_OUTPUT"), "/tmp/records");
  EXPECT_EQ(env.at("KERNCAP_KERNEL"), "");  // a stale pattern in the user's shell is overridden
  EXPECT_FALSE(env.contains("KERNCAP_CHUNK_BYTES"));
  EXPECT_FALSE(env.contains("KERNCAP_STAGING_BYTES"));
  EXPECT_FALSE(env.contains("KERNCAP_DUMP_IMAGES"));
  for (const auto& [name, value] : env) EXPECT_TRUE(env_var(Var::Mode).name == name || !name.empty());
}

TEST(FormatProtocol, MalformedValuesAreReportedByName) {
  std::vector<std::string> problems;
  Config c = from_map({{"KERNCAP_MODE", "capture"},
                       {"KERNCAP_OUTPUT", "/x"},
                       {"KERNCAP_KERNEL", "k"},
                       {"KERNCAP_DISPATCH", "three"},
                       {"KERNCAP_REGEX", "maybe"},
                       {"KERNCAP_STAGING_BYTES", "1000"}},
                      &problems);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0], "KERNCAP_REGEX must be 1 or 0");
  EXPECT_EQ(problems[1], "KERNCAP_DISPATCH is not a number");
  EXPECT_EQ(problems[2], "KERNCAP_STAGING_BYTES must be at least 1 MiB");
  EXPECT_EQ(c.mode, Mode::Capture);  // a bad tunable keeps its default, the capture goes on
  EXPECT_EQ(c.dispatch, 0u);
  EXPECT_EQ(c.staging_bytes, Config{}.staging_bytes);
}

TEST(FormatProtocol, ModeWithoutOutputOrKernelTurnsTheLibraryOff) {
  std::vector<std::string> problems;
  EXPECT_EQ(from_map({{"KERNCAP_MODE", "profile"}}, &problems).mode, Mode::Off);
  EXPECT_EQ(problems, std::vector<std::string>{"KERNCAP_OUTPUT is not set"});
  problems.clear();
  EXPECT_EQ(from_map({{"KERNCAP_MODE", "capture"}, {"KERNCAP_OUTPUT", "/x"}}, &problems).mode, Mode::Off);
  EXPECT_EQ(problems, std::vector<std::string>{"KERNCAP_KERNEL is not set"});
  problems.clear();
  EXPECT_EQ(from_map({}, &problems).mode, Mode::Off);
  EXPECT_TRUE(problems.empty());
}

TEST(FormatProtocol, JsonListsEveryVariableWithItsReaders) {
  auto j = env_json();
  EXPECT_EQ(j["protocol"], kProtocolVersion);
  ASSERT_EQ(j["variables"].size(), env_vars().size());
  EXPECT_EQ(j["variables"][0]["name"], "KERNCAP_MODE");
  EXPECT_EQ(j["variables"][0]["readers"], nlohmann::json::array({"library"}));
}

TEST(FormatProtocol, DocsEnvMdIsTheTablesOutput) {
  std::ifstream in(std::string(KERNCAP_FIXTURES) + "/../../docs/env.md");
  ASSERT_TRUE(in) << "docs/env.md is missing: kerncap env --markdown > docs/env.md";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), env_markdown())
      << "docs/env.md differs from the table in src/format/protocol.cpp: run kerncap env --markdown > docs/env.md";
}

TEST(FormatProtocol, ProfileCuptiSettingsParseAndPrintBack) {
  std::vector<std::string> problems;
  Config c = from_map({{"KERNCAP_MODE", "profile"},
                       {"KERNCAP_OUTPUT", "/x"},
                       {"KERNCAP_PROFILE_CUPTI", "kind=kernel,device_buffer=32M,pool_limit=500,per_thread=0,"
                                                 "pinned=1,memory=0,host_buffer=16M,flush_ms=10,preallocate=4,"
                                                 "correlation=always,callback=empty"}},
                      &problems);
  EXPECT_TRUE(problems.empty());
  const ProfileCupti& p = c.profile_cupti;
  EXPECT_EQ(p.kind, ProfileCupti::Kind::Kernel);
  EXPECT_EQ(p.device_buffer, 32u << 20);
  EXPECT_EQ(p.pool_limit, 500u);
  EXPECT_EQ(p.preallocate, 4u);
  EXPECT_EQ(p.per_thread, false);
  EXPECT_EQ(p.pinned, true);
  EXPECT_FALSE(p.memory);
  EXPECT_EQ(p.host_buffer, 16u << 20);
  EXPECT_EQ(p.flush_ms, 10u);
  EXPECT_TRUE(p.correlation_always);
  EXPECT_EQ(p.callback, ProfileCupti::Callback::Empty);
  // Printed back, it reads the same; the defaults print nothing (the user's value passes through).
  EXPECT_EQ(from_map(c.to_env(), nullptr).profile_cupti, p);
  EXPECT_FALSE(Config{}.to_env().contains("KERNCAP_PROFILE_CUPTI"));
  ProfileCupti none;
  EXPECT_EQ(profile_cupti_from_text("kind=none", &none), "");
  EXPECT_EQ(none.kind, ProfileCupti::Kind::Off);
  EXPECT_EQ(profile_cupti_text(none), "kind=none");
  ProfileCupti bad;
  EXPECT_NE(profile_cupti_from_text("correlation=sometimes", &bad), "");
}

TEST(FormatProtocol, BadProfileCuptiSettingsKeepTheDefaults) {
  for (const char* bad : {"kind=fast", "pool_limit=0", "per_thread=yes", "host_buffer=100", "speed=1", "kind",
                          "device_buffer=12Q", "callback=none"}) {
    std::vector<std::string> problems;
    Config c = from_map({{"KERNCAP_MODE", "profile"}, {"KERNCAP_OUTPUT", "/x"}, {"KERNCAP_PROFILE_CUPTI", bad}},
                        &problems);
    ASSERT_EQ(problems.size(), 1u) << bad;
    EXPECT_TRUE(problems[0].starts_with("KERNCAP_PROFILE_CUPTI ")) << problems[0];
    EXPECT_EQ(c.profile_cupti, ProfileCupti{}) << bad;
  }
}

TEST(FormatProtocol, SampledTimingSaysItsNumbers) {
  const std::string meaning(env_var(Var::ProfileSample).meaning);
  EXPECT_NE(meaning.find(std::to_string(kSampleExactLaunches) + " launches"), std::string::npos) << meaning;
  EXPECT_NE(meaning.find(std::to_string(kSampleWindow) + " launches"), std::string::npos) << meaning;
  std::vector<std::string> problems;
  Config c = from_map({{"KERNCAP_MODE", "profile"}, {"KERNCAP_OUTPUT", "/x"}, {"KERNCAP_PROFILE_SAMPLE", "10"}}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.profile_sample, 10u);
  EXPECT_EQ(c.to_env().at("KERNCAP_PROFILE_SAMPLE"), "10");
  EXPECT_EQ(Config{}.to_env().at("KERNCAP_PROFILE_SAMPLE"), "0");  // a stale value in the shell is overridden
  for (const char* bad : {"1", "1001", "x"}) {
    problems.clear();
    from_map({{"KERNCAP_MODE", "profile"}, {"KERNCAP_OUTPUT", "/x"}, {"KERNCAP_PROFILE_SAMPLE", bad}}, &problems);
    EXPECT_EQ(problems.size(), 1u) << bad;
  }
}

TEST(FormatProtocol, ProfileParamsRoundTripAndBadValuesAreRefused) {
  Config c;
  c.mode = Mode::Profile;
  c.output = "/tmp/records";
  c.profile_params = {{"layer_norm", MatchKind::Substring}, {"^gemm", MatchKind::Regex}, {"_Z1kv", MatchKind::Exact}};
  std::vector<std::string> problems;
  Config back = from_map(c.to_env(), &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(back.profile_params, c.profile_params);
  // Unset: "" so that a stale value in the shell is overridden, and read back as none.
  EXPECT_EQ(Config{}.to_env().at("KERNCAP_PROFILE_PARAMS"), "");
  for (const char* bad : {"[]", "{\"version\": 2, \"kernels\": [{\"kernel\": \"k\", \"match\": \"exact\"}]}",
                          "{\"version\": 1, \"kernels\": []}", "{\"version\": 1, \"kernels\": [{\"kernel\": \"\"}]}",
                          "{\"version\": 1, \"kernels\": [{\"kernel\": \"k\", \"match\": \"glob\"}]}"}) {
    std::vector<std::string> why;
    Config x = from_map({{"KERNCAP_MODE", "profile"}, {"KERNCAP_OUTPUT", "/x"}, {"KERNCAP_PROFILE_PARAMS", bad}}, &why);
    EXPECT_EQ(why.size(), 1u) << bad;
    EXPECT_TRUE(x.profile_params.empty()) << bad;
  }
}
