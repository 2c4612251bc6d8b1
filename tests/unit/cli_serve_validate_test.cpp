// `kerncap validate` (the built binary) against a stand-in `kerncap serve`: a Server of this
// test process with a fake evaluation, listening on the name of a scratch capture. What the
// validation prints and returns when served, and when it validates itself instead.
#include <gtest/gtest.h>

#include "replay/judge.hpp"

#include "cli_run.hpp"
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include "cli/serve_route.hpp"
#include "serve/server.hpp"
#include "serve/socket.hpp"
#include "scratch_capture.hpp"

namespace kerncap::cli {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

using kerncap::test::CliRun;

const std::string kKerncap = std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap";

CliRun shell(const std::string& line) { return kerncap::test::run_shell(line); }

json evaluation(bool pass) {
  json region = {{"id", 0},         {"kind", "device"}, {"base", "0x7f0000000000"}, {"size", 256},
                 {"written", 256},  {"pass", pass},     {"summary", pass ? "identical" : "3 bytes differ"}};
  return {{"result", pass ? "PASS" : "FAIL"},
          {"line", pass ? "Result: PASS (weak)" : "Result: FAIL (1 of 1 regions differ)"},
          {"regions", json::array({region})},
          {"spec", "default"},
          {"strength", "weak-no-footprint"},
          {"policy", kerncap::replay::JudgePolicy{}.to_json()},
          {"nondeterministic_regions", json::array()},
          {"kernel", "kernel(float*)"},
          {"image", "the captured image"},
          {"device", 0},
          {"relocated_regions", 0},
          {"rewritten_words", 0},
          {"determinism_checked", false},
          {"timing", nullptr},
          {"image_hash", "0xab"},
          {"captured_image", true},
          {"loaded", false},
          {"memory", "written"},
          {"seconds", 0.01},
          {"restore_work", {{"seconds", 0.0}, {"copied_bytes", 256}, {"memset_bytes", 0}, {"overlaid_bytes", 0}}}};
}

class ServeValidateTest : public kerncap::testing::ScratchDir {
 protected:
  void start(ServerInfo info, serve::Evaluate ev) {
    kerncap::testing::write_small_capture(out_);
    const fs::path key = serve::server_dir(out_);
    info.dir = key.string();
    server_ = std::make_unique<serve::Server>(serve::ServerOptions{.name = serve::socket_name(key, ::geteuid())},
                                              info.to_json(), std::move(ev), [](const std::string&) {});
    thread_ = std::thread([this] { server_->run(&stop_); });
  }
  void TearDown() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ScratchDir::TearDown();
  }
  CliRun validate(const std::string& args) {
    return shell("KERNCAP_SERVE= timeout 20 " + kKerncap + " validate " + out_.string() + " " + args);
  }
  std::atomic<bool> stop_{false};
  std::unique_ptr<serve::Server> server_;
  std::thread thread_;
  std::vector<json> requests_;
};

ServerInfo weak_server() {
  ServerInfo s;
  s.pid = ::getpid();
  s.footprint = "never";
  s.device_line = "device 0: a stand-in GPU";
  s.compare_json = "/elsewhere/compare.json";
  s.placement = {{"blocks", 1}, {"blocks_at_hint", 1}, {"runs_fallback", 0}, {"runs_relocated", 0},
                 {"mapped_bytes", 32 << 20}};
  s.kerncap = KERNCAP_VERSION;
  return s;
}

TEST_F(ServeValidateTest, AServedPassPrintsValidatesTextAndSaysWhoEvaluated) {
  start(weak_server(), [this](const serve::Request& r, bool&) {
    requests_.push_back(r.options);
    return evaluation(true);
  });
  const CliRun r = validate("--footprint never");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("evaluated by kerncap serve (pid " + std::to_string(::getpid()) + ")"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("kernel(float*)\n  image: the captured image\n  device 0: a stand-in GPU\n  placement: 1 of 1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Result: PASS (weak)"), std::string::npos) << r.out;
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_[0]["time"], false);
}

TEST_F(ServeValidateTest, AServedFailExitsOneAndJsonIsValidatesDocument) {
  start(weak_server(), [](const serve::Request&, bool&) { return evaluation(false); });
  CliRun r = validate("--footprint never");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("  region 0 (device at 0x7f0000000000, 256 B; launch wrote 256 B): 3 bytes differ"),
            std::string::npos)
      << r.out;
  r = shell("(KERNCAP_SERVE= timeout 20 " + kKerncap + " validate " + out_.string() + " --footprint never --json 2>/dev/null)");
  EXPECT_EQ(r.code, 1) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["result"], "FAIL");
  EXPECT_EQ(j["strength"], "weak-no-footprint");
  EXPECT_EQ(j["restore_work"]["copied_bytes"], 256);
  EXPECT_EQ(j["served_by"]["pid"], ::getpid());  // who evaluated it (absent when this process did)
  for (const char* k : {"regions", "line", "kernel", "image", "device", "relocated_regions", "rewritten_words",
                        "determinism_checked", "spec"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k : {"timing", "image_hash", "captured_image", "loaded", "memory", "seconds"})
    EXPECT_FALSE(j.contains(k)) << k;
}

TEST_F(ServeValidateTest, StatusSaysWhetherAServerAnswersAndWhatItServes) {
  kerncap::testing::write_small_capture(out_);
  const std::string status = "timeout 20 " + kKerncap + " serve " + out_.string() + " --status";
  CliRun r = shell(status);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("none is running for"), std::string::npos) << r.out;
  r = shell("(" + status + " --json 2>/dev/null)");
  EXPECT_EQ(r.code, 1) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["format"], "kerncap-serve-status");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["serving"], false);
  EXPECT_FALSE(j.contains("pid"));

  start(weak_server(), [](const serve::Request&, bool&) { return evaluation(true); });
  ASSERT_EQ(validate("--footprint never").code, 0);
  r = shell("(" + status + " --json 2>/dev/null)");
  EXPECT_EQ(r.code, 0) << r.out;
  j = json::parse(r.out);
  EXPECT_EQ(j["serving"], true);
  EXPECT_EQ(j["pid"], ::getpid());
  EXPECT_EQ(j["server"]["served"], 1);
  EXPECT_EQ(j["server"]["footprint"], "never");
  r = shell(status);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("is served by pid " + std::to_string(::getpid()) + " (1 evaluations so far)"), std::string::npos)
      << r.out;
  // --json alone, or with --stop, is a usage error: nothing is asked or stopped.
  EXPECT_EQ(shell("timeout 20 " + kKerncap + " serve " + out_.string() + " --json").code, 2);
  EXPECT_EQ(shell("timeout 20 " + kKerncap + " serve " + out_.string() + " --status --stop").code, 2);
  EXPECT_EQ(shell(status).code, 0);
}

TEST_F(ServeValidateTest, TheImagesInputErrorIsValidatesInputError) {
  start(weak_server(), [](const serve::Request&, bool&) -> json {
    input_error("v.cubin does not contain the captured kernel _Z6kernelPf");
  });
  std::ofstream(out_ / "v.cubin") << "x";
  const CliRun r = validate("--footprint never --cubin " + (out_ / "v.cubin").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("kerncap: error: v.cubin does not contain the captured kernel"), std::string::npos) << r.out;
}

TEST_F(ServeValidateTest, WhatTheServerCannotAnswerIsValidatedHereWithOneLine) {
  std::atomic<int> asked{0};
  start(weak_server(), [&](const serve::Request&, bool&) {
    ++asked;
    return evaluation(true);
  });
  // A strong validation asked of a weak server: this process validates (and, without a GPU,
  // fails as it would without a server), saying why in one line.
  CliRun r = validate("--footprint never --grid 2");
  EXPECT_NE(r.out.find("not evaluated by kerncap serve (pid " + std::to_string(::getpid()) + "): --grid/--block"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("evaluated by kerncap serve (pid"), r.out.find("not evaluated by kerncap serve") + 4) << r.out;
  r = validate("--footprint never --server off");
  EXPECT_EQ(r.out.find("kerncap serve"), std::string::npos) << r.out;
  r = shell("KERNCAP_SERVE=off timeout 20 " + kKerncap + " validate " + out_.string() + " --footprint never");
  EXPECT_EQ(r.out.find("kerncap serve"), std::string::npos) << r.out;
  EXPECT_EQ(asked.load(), 0);
}

TEST_F(ServeValidateTest, AServerThatCannotAnswerLeavesTheValidationHere) {
  start(weak_server(), [](const serve::Request&, bool&) -> json { throw serve::Stale("the capture changed"); });
  const CliRun r = validate("--footprint never");
  EXPECT_NE(r.out.find("not evaluated by kerncap serve (pid " + std::to_string(::getpid()) +
                       "): it answered stale: the capture changed; validating in this process"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace kerncap::cli
