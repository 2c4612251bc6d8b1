// `kerncap window reproducer OUT` (docs/window.md): writes the window's Makefile and README.md
// beside OUT/capture from an existing window capture (one made before extract wrote them),
// refuses what is not a window, and the Makefile it writes calls this kerncap: `make info`
// lists the operations through the built binary (no GPU needed for that target).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"
#include "format/window.hpp"
#include "reproducer_fixtures.hpp"

namespace kerncap {
namespace {
namespace fs = std::filesystem;

const std::string kWinKerncap = std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap";

format::Window cli_window() {
  format::Window w;
  w.from = "rms_norm";
  w.to = "silu";
  w.stream = 0x5000;
  for (const char* name : {"_Z8rms_normPfPKfi", "_Z4siluPfi"}) {
    format::WindowOp k;
    k.kind = format::WindowOp::Kind::Kernel;
    k.mangled = name;
    k.image_kind = "cubin";
    k.image_hash = 0xab;
    k.params = {{0, 8}};
    k.params_size = 8;
    k.in_app_ns = 2000;
    w.ops.push_back(k);
  }
  format::WindowOp m;
  m.kind = format::WindowOp::Kind::Memset;
  m.dst = 0x7f0000000000ull;
  m.width = 16;
  w.ops.insert(w.ops.begin() + 1, m);
  w.in_app_window_ns = 5000;
  w.in_app_kernels_ns = 4000;
  return w;
}

class CliWindowReproducer : public ::testing::Test {
 protected:
  void SetUp() override { out_ = scratch_.root() / "win"; }
  void write_window() {
    testing::write_fake_capture(out_, "_Z8rms_normPfPKfi", "rms_norm(float*, float const*, int)");
    format::write_json_atomic(out_ / "capture" / format::kWindowFile, format::to_json(cli_window()));
  }
  testing::Scratch scratch_;
  fs::path out_;
};

TEST_F(CliWindowReproducer, WritesTheFilesAndTheMakefileCallsThisKerncap) {
  write_window();
  const auto r = test::run_shell(kWinKerncap + " window reproducer '" + out_.string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("for the window of 3 operations (2 kernel launches)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("make run | time | validate"), std::string::npos) << r.out;
  const std::string mk = testing::slurp(out_ / "Makefile");
  const std::string readme = testing::slurp(out_ / "README.md");
  EXPECT_NE(readme.find("| 1 | memset |"), std::string::npos) << readme;
  EXPECT_NE(readme.find("| 2 | kernel | `silu` |"), std::string::npos) << readme;
  EXPECT_NE(readme.find("50.0%"), std::string::npos);
  // The Makefile names the binary that wrote it (the build's, resolved through /proc/self/exe).
  const std::string self = fs::canonical(kWinKerncap).string();
  EXPECT_NE(mk.find("KERNCAP ?= " + self + "\n"), std::string::npos) << mk;
  if (std::system("make --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "make not installed";
  const auto info = test::run_shell("make -s --no-print-directory -C '" + out_.string() + "' info");
  EXPECT_EQ(info.code, 0) << info.out;
  EXPECT_NE(info.out.find("3 operations (2 kernel launches)"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("silu(float*, int)"), std::string::npos) << info.out;
}

TEST_F(CliWindowReproducer, CaptureDirectoryAndJson) {
  write_window();
  const auto r = test::run_shell(kWinKerncap + " window reproducer --json '" + (out_ / "capture").string() + "/'");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("output").get<std::string>(), out_.string());
  EXPECT_EQ(j.at("makefile").get<std::string>(), (out_ / "Makefile").string());
  EXPECT_EQ(j.at("readme").get<std::string>(), (out_ / "README.md").string());
  EXPECT_TRUE(fs::exists(out_ / "Makefile"));
}

TEST_F(CliWindowReproducer, RefusesWhatIsNotAWindowCaptureInOut) {
  testing::write_fake_capture(out_, "_Z6kernelPf", "kernel(float*)");
  auto r = test::run_shell(kWinKerncap + " window reproducer '" + out_.string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("not a window"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out_ / "Makefile"));
  // A window capture directory not named capture/: its Makefile's `.` would not find it.
  format::write_json_atomic(out_ / "capture" / format::kWindowFile, format::to_json(cli_window()));
  fs::rename(out_ / "capture", scratch_.root() / "elsewhere");
  r = test::run_shell(kWinKerncap + " window reproducer '" + (scratch_.root() / "elsewhere").string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("named capture/"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(scratch_.root() / "Makefile"));
  const auto help = test::run_shell(kWinKerncap + " window reproducer --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("OUT/Makefile"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace kerncap
