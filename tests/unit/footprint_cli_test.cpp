// `kerncap footprint` without a GPU: clear errors and exit codes for a missing capture, a
// missing sanitizer library and a missing driver; a footprint already in the capture is
// printed (table and --json) without measuring.
#include <gtest/gtest.h>

#include "cli_run.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>

#include "common/driver.hpp"
#include "footprint/footprint.hpp"
#include "format/capture_dir.hpp"
#include "format/footprint.hpp"
#include "scratch_capture.hpp"

namespace kerncap::format {
namespace {

using Result = kerncap::test::CliRun;

Result kerncap(const std::string& args) {
  return kerncap::test::run_shell(std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap " + args);
}

class FootprintCliTest : public kerncap::testing::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    m_ = kerncap::testing::write_small_capture(out_, 1);
  }

  Footprint measured() const {
    Footprint f;
    f.tool_version = "test";
    f.kernel = m_.mangled_name;
    f.image_hash = m_.image_hash;
    f.device_name = "NVIDIA H100 80GB HBM3";
    RegionFootprint r;
    r.id = 0;
    r.base = m_.regions[0].base;
    r.size = 256;
    r.read = Bitmap(4, 256);
    r.written = Bitmap(1, 256);
    r.rbw = Bitmap(4, 256);
    r.written.set_range(0, 256);
    f.regions.push_back(r);
    f.escapes.push_back({0x1234, 0x7000000040ull, 4, true, false, false, "4 B before region 0"});
    f.escape_count = 1;
    f.kernel_pc = 0x7000000000ull;
    f.accesses = 64;
    f.instrumented_ms = 1.0;
    f.plain_ms = 0.01;
    return f;
  }

  Manifest m_;
};

TEST_F(FootprintCliTest, MissingCaptureIsAnInputError) {
  Result r = kerncap("footprint " + (out_ / "nope").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no such directory"), std::string::npos) << r.out;
}

TEST_F(FootprintCliTest, MissingSanitizerLibrarySaysSo) {
  Result r = kerncap("footprint " + out_.string() + " --sanitizer-lib /nonexistent/libsanitizer-public.so");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("footprint needs libsanitizer-public.so"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out_ / "capture" / kFootprintJson));
}

TEST_F(FootprintCliTest, NoDriverIsADeviceError) {
  if (!footprint::built_with_sanitizer()) GTEST_SKIP() << "built without the sanitizer API (tested above)";
  if (driver_load_error().empty()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  Result r = kerncap("footprint " + out_.string());
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("libcuda.so.1"), std::string::npos) << r.out;
}

TEST_F(FootprintCliTest, AnExistingFootprintIsPrintedWithoutAGpu) {
  write_footprint(out_ / "capture", measured());
  Result r = kerncap("footprint " + out_.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("measured earlier"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("256 B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("escaped: 1 access"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at pc +0x40"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(100x slower"), std::string::npos) << r.out;

  r = kerncap("footprint " + out_.string() + " --json");
  EXPECT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cached"], true);
  EXPECT_EQ(j["regions"][0]["written_bytes"], 256);
  EXPECT_EQ(j["regions"][0]["write_only_bytes"], 256);
  EXPECT_EQ(j["escape_count"], 1);
}

TEST_F(FootprintCliTest, AStaleFootprintAsksForForce) {
  Footprint f = measured();
  f.image_hash = 0xcd;
  write_footprint(out_ / "capture", f);
  Result r = kerncap("footprint " + out_.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--force"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kerncap::format
