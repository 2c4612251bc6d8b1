// Which validations `kerncap serve` may answer (the same verdict as in-process) and which stay
// in the validating process, and how a served evaluation is turned into validate's output.
#include <gtest/gtest.h>

#include "cli/serve_route.hpp"
#include "cli/validate_output.hpp"
#include "common/error.hpp"
#include "serve/protocol.hpp"

namespace kerncap::cli {
namespace {
using nlohmann::json;

ServerInfo strong_server() {
  ServerInfo s;
  s.pid = 42;
  s.dir = "/work/OUT";
  s.device = 0;
  s.strong = true;
  s.footprint = "auto";
  s.device_line = "device 0: NVIDIA H100 (the captured model)";
  s.compare_json = "/work/OUT/compare.json";
  s.placement = {{"blocks", 3}, {"blocks_at_hint", 3}, {"runs_fallback", 0}, {"runs_relocated", 0},
                 {"mapped_bytes", 96 << 20}};
  s.kerncap = KERNCAP_VERSION;
  return s;
}

TEST(ServeRoute, ServerUseFromFlagThenEnvironment) {
  EXPECT_EQ(server_use_from("", std::nullopt), ServerUse::Auto);
  EXPECT_EQ(server_use_from("", std::string("off")), ServerUse::Off);
  EXPECT_EQ(server_use_from("", std::string("")), ServerUse::Auto);
  EXPECT_EQ(server_use_from("auto", std::string("off")), ServerUse::Auto);
  EXPECT_EQ(server_use_from("off", std::nullopt), ServerUse::Off);
  EXPECT_THROW(server_use_from("on", std::nullopt), Error);
  try {
    server_use_from("", std::string("no"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_EQ(std::string(e.what()), "KERNCAP_SERVE=no: expected auto or off");
  }
}

TEST(ServeRoute, PlainAndVariantValidationsAreServed) {
  const ServerInfo s = strong_server();
  EXPECT_EQ(why_not_served({}, s, "/work/OUT"), "");
  ValidateShape v;
  v.footprint = FootprintUse::Require;
  v.fuzz = 10;
  v.device = 0;
  EXPECT_EQ(why_not_served(v, s, "/work/OUT"), "");
}

// Every judging flag is the judge's (it travels as kc_evaluate's options): none keeps a
// validation out of the server any more.
TEST(ServeRoute, EveryJudgingFlagIsServed) {
  ValidateShape v;
  v.options = {{"dtype", "fp32"}, {"atol", 1e-7}, {"invariants", "no_nan"}, {"tolerance", {"0:atol=1"}},
               {"min_speedup", 1.1}, {"check_determinism", false}, {"exact", true}};
  EXPECT_EQ(why_not_served(v, strong_server(), "/work/OUT"), "");
}

TEST(ServeRoute, WhatTheLoopCannotHonourStaysInProcess) {
  const ServerInfo s = strong_server();
  auto why = [&](auto set) {
    ValidateShape v;
    set(v);
    return why_not_served(v, s, "/work/OUT");
  };
  EXPECT_NE(why([](ValidateShape& v) { v.geometry = true; }).find("--grid/--block"), std::string::npos);
  EXPECT_NE(why([](ValidateShape& v) { v.no_relocate = true; }), "");
  EXPECT_NE(why([](ValidateShape& v) { v.collide = true; }), "");
  EXPECT_NE(why([](ValidateShape& v) { v.verify = true; }), "");
  EXPECT_NE(why([](ValidateShape& v) { v.device = 1; }).find("device 0, not 1"), std::string::npos);
  // Strength must match: a strong server never answers a weak request, nor the reverse.
  EXPECT_NE(why([](ValidateShape& v) { v.footprint = FootprintUse::Never; }), "");
  ServerInfo weak = s;
  weak.strong = false;
  EXPECT_NE(why_not_served({}, weak, "/work/OUT"), "");
  ValidateShape never;
  never.footprint = FootprintUse::Never;
  EXPECT_EQ(why_not_served(never, weak, "/work/OUT"), "");
  never.fuzz = 4;  // this process says why fuzzing needs a footprint
  EXPECT_NE(why_not_served(never, weak, "/work/OUT"), "");
  // A server started on another device than the default choice: only for that --device.
  ServerInfo on1 = s;
  on1.device = 1;
  on1.device_option = 1;
  EXPECT_NE(why_not_served({}, on1, "/work/OUT"), "");
  ValidateShape d1;
  d1.device = 1;
  EXPECT_EQ(why_not_served(d1, on1, "/work/OUT"), "");
  // Another directory (a hash collision) or another kerncap.
  EXPECT_NE(why_not_served({}, s, "/work/OTHER"), "");
  ServerInfo old = s;
  old.kerncap = "0.0.1";
  EXPECT_NE(why_not_served({}, old, "/work/OUT"), "");
}

TEST(ServeRoute, ServerInfoRoundTripsAndIsChecked) {
  const ServerInfo s = strong_server();
  const ServerInfo back = ServerInfo::from_json(s.to_json());
  EXPECT_EQ(back.to_json(), s.to_json());
  json j = s.to_json();
  j.erase("strong");
  EXPECT_THROW(ServerInfo::from_json(j), serve::ProtocolError);
  j = s.to_json();
  j["placement"].erase("blocks");
  EXPECT_THROW(ServerInfo::from_json(j), serve::ProtocolError);
}

TEST(ServeRoute, TheSpecIsNamedAsThisProcessNamesIt) {
  const ServerInfo s = strong_server();
  EXPECT_EQ(spec_source_here("default", s, "./compare.json"), "default");
  EXPECT_EQ(spec_source_here("/work/OUT/compare.json", s, "./compare.json"), "./compare.json");
  EXPECT_EQ(spec_source_here("/work/OUT/compare.json + signature types (nondeterministic kernel)", s, "./compare.json"),
            "./compare.json + signature types (nondeterministic kernel)");
  EXPECT_EQ(spec_source_here("command line", s, "./compare.json"), "command line");
}

TEST(ServeRoute, AServedEvaluationBecomesValidatesOutput) {
  const json e = {{"result", "PASS"},
                  {"line", "Result: PASS (strong)"},
                  {"regions", json::array()},
                  {"spec", "default"},
                  {"strength", "strong"},
                  {"policy", {{"invariants_from", "OUT/kerncap.toml"}, {"min_speedup_from", "--min-speedup"}}},
                  {"speedup", {{"pass", true}, {"speedup", 1.5}, {"line", "Speed-up: PASS (x1.500)"}}},
                  {"kernel", "k(float*)"},
                  {"image", "optimized.cubin"},
                  {"device", 0},
                  {"relocated_regions", 0},
                  {"rewritten_words", 5},
                  {"determinism_checked", false},
                  {"timing", nullptr},
                  {"image_hash", "0xab"},
                  {"captured_image", false},
                  {"loaded", true},
                  {"memory", "written"},
                  {"seconds", 0.01},
                  {"restore_work", {{"seconds", 0.0}, {"copied_bytes", 64}, {"memset_bytes", 0}, {"overlaid_bytes", 0}}}};
  const ValidateOutput o = output_from_evaluation(e, "device 0: H100", strong_server().placement);
  EXPECT_TRUE(o.pass);
  EXPECT_EQ(o.kernel, "k(float*)");
  EXPECT_EQ(o.image, "optimized.cubin");
  EXPECT_EQ(o.rewritten_words, 5u);
  EXPECT_EQ(o.placement.blocks, 3u);
  EXPECT_EQ(o.restore_work["copied_bytes"], 64);
  EXPECT_EQ(o.invariants_from, "OUT/kerncap.toml");
  EXPECT_EQ(o.speedup_line, "Speed-up: PASS (x1.500) [from --min-speedup]");
  EXPECT_FALSE(o.speedup->contains("line"));
  EXPECT_TRUE(o.verdict.contains("policy"));  // the verdict document says what judged it
  // The verdict keeps its own keys, not the loop's.
  EXPECT_EQ(o.verdict["strength"], "strong");
  for (const char* k : {"timing", "image_hash", "captured_image", "loaded", "memory", "seconds", "kernel"})
    EXPECT_FALSE(o.verdict.contains(k)) << k;
}

}  // namespace
}  // namespace kerncap::cli
