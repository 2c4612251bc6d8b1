// `kerncap info` and `kerncap prune` on version 3 captures, through the built binary: the
// chunk line (stored, distinct, compressed), a shared store named with --store or
// KERNCAP_STORE (never taken from the capture), prune's refusal without a footprint, its dry
// run and its result.
#include <gtest/gtest.h>

#include "cli_run.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>

#include "format/capture_dir.hpp"
#include "format/footprint.hpp"
#include "scratch_capture.hpp"

namespace kerncap::format {
namespace {

using kerncap::test::CliRun;

const std::string kKerncap = std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap";

CliRun shell(const std::string& line) { return kerncap::test::run_shell(line); }

CliRun kerncap(const std::string& args) { return shell("timeout 20 " + kKerncap + " " + args); }

std::vector<uint8_t> sample() {
  std::vector<uint8_t> d(uint64_t{1} << 20);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(i % 251 < 200 ? i % 13 : i * 7);
  return d;
}

class StoreCliTest : public kerncap::testing::ScratchDir {};

TEST_F(StoreCliTest, InfoShowsChunksAndVerifiesThem) {
  kerncap::testing::write_chunked_capture(out_, sample(), {}, uint64_t{64} << 10);
  const CliRun r = kerncap("info " + out_.string() + " --verify");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("chunks     1.0 MiB stored in 16 chunks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compressed (ratio"), std::string::npos) << r.out;
}

TEST_F(StoreCliTest, SharedStoreIsNamedOnTheCommandLineOrInTheEnvironment) {
  const fs::path store = out_ / "store";
  kerncap::testing::write_chunked_capture(out_ / "a", sample(), {}, uint64_t{64} << 10, store);
  const std::string a = (out_ / "a").string();
  CliRun r = kerncap("info " + a);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("shared chunk store (not given"), std::string::npos) << r.out;
  r = kerncap("info " + a + " --verify");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--store DIR"), std::string::npos) << r.out;
  EXPECT_EQ(kerncap("info " + a + " --verify --store " + store.string()).code, 0);
  r = kerncap("info " + a + " --verify --store " + out_.string());  // the wrong directory
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(shell("KERNCAP_STORE=" + store.string() + " timeout 20 " + kKerncap + " info " + a + " --verify").code, 0);
}

TEST_F(StoreCliTest, PruneNeedsAFootprintThenDropsTheUntouched) {
  const Manifest m = kerncap::testing::write_chunked_capture(out_, sample(), {}, uint64_t{64} << 10);
  CliRun r = kerncap("prune " + out_.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("kerncap footprint OUT"), std::string::npos) << r.out;

  Footprint f;
  f.kernel = m.mangled_name;
  f.image_hash = m.image_hash;
  RegionFootprint rf;
  rf.id = 0;
  rf.size = m.regions[0].size;
  rf.read = Bitmap(4, rf.size);
  rf.written = Bitmap(1, rf.size);
  rf.rbw = Bitmap(4, rf.size);
  rf.read.set_range(0, 1024);  // the first 4 KiB
  f.regions.push_back(std::move(rf));
  write_footprint(out_ / kCaptureDirName, f);
  r = kerncap("prune --dry-run " + out_.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("would prune stored bytes: 1.0 MiB -> 4.0 KiB"), std::string::npos) << r.out;
  r = kerncap("prune " + out_.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("pruned stored bytes"), std::string::npos) << r.out;
  r = kerncap("info " + out_.string() + " --verify");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("pruned: 1020.0 KiB"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kerncap::format
