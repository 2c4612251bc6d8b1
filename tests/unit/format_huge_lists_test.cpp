// Issue 38's fuzz run: captures whose lists are huge hung `validate` and `extract` past 10 s
// (after.runs with 100,000 one-byte runs, params.slots with 100,000 entries). Each such list
// is either refused at once with a message naming the bound, or read in near-linear time.
// Also the ambiguous inputs found beside them: bytes after a NUL at the end of the manifest,
// an empty code image whose hash matches, and OUT/capture as a link to a directory elsewhere.
#include <gtest/gtest.h>

#include <xxhash.h>

#include <chrono>
#include <fstream>

#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "format/region_bytes.hpp"
#include "format/strict_json.hpp"
#include "scratch_capture.hpp"

namespace kerncap::format {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class HugeListsTest : public kerncap::testing::SmallCaptureDir {
 protected:
  void put_blob(const std::string& rel, const std::vector<uint8_t>& bytes) const {
    fs::remove(dir_ / rel);
    write_file(dir_ / rel, bytes.data(), bytes.size());
  }

  // open_capture's Error(Input) message ("" when it opens) and how long it took.
  std::string refusal(double* seconds = nullptr) const {
    const auto t0 = Clock::now();
    std::string why;
    try {
      open_capture(out_);
    } catch (const Error& e) {
      why = e.kind() == ErrorKind::Input ? std::string(e.what()) : "NOT AN INPUT ERROR: " + std::string(e.what());
    }
    if (seconds) *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return why;
  }

};

// 100,000 one-byte AFTER runs over a region big enough to hold them apart: a real capture can
// have that many (one per changed chunk), so they are read, in well under a second, and every
// per-region pass over them stays near-linear.
TEST_F(HugeListsTest, HundredThousandOneByteAfterRunsAreReadQuickly) {
  constexpr size_t kRuns = 100000;
  json j = original_;
  j["regions"][0]["size"] = 2 * kRuns;
  put_blob("mem/0.bin", std::vector<uint8_t>(2 * kRuns, 1));
  json runs = json::array();
  for (size_t i = 0; i < kRuns; ++i)
    runs.push_back({{"region", 0}, {"offset", 2 * (kRuns - 1 - i)}, {"size", 1}, {"file_offset", i}});
  j["after"]["runs"] = runs;
  put(j);
  put_blob(j["after"]["file"], std::vector<uint8_t>(kRuns, 2));
  double seconds = 0;
  EXPECT_EQ(refusal(&seconds), "");
  EXPECT_LT(seconds, 5.0);
}

TEST_F(HugeListsTest, OverlappingAfterRunsAmongManyAreRefusedQuickly) {
  constexpr size_t kRuns = 100000;
  json j = original_;
  json runs = json::array();
  for (size_t i = 0; i < kRuns; ++i) runs.push_back({{"region", 0}, {"offset", 0}, {"size", 1}, {"file_offset", i}});
  j["after"]["runs"] = runs;
  put(j);
  put_blob(j["after"]["file"], std::vector<uint8_t>(kRuns, 2));
  double seconds = 0;
  const std::string why = refusal(&seconds);
  EXPECT_NE(why.find("overlap"), std::string::npos) << why;
  EXPECT_LT(seconds, 5.0);
}

// A launch passes at most 32,764 bytes of parameters, and a parameter has at least one byte:
// a longer slot list is refused before it is read.
TEST_F(HugeListsTest, HundredThousandParamSlotsAreRefused) {
  json j = original_;
  json slots = json::array();
  for (size_t i = 0; i < 100000; ++i) slots.push_back({{"offset", 0}, {"size", 1}});
  j["params"]["slots"] = slots;
  put(j);
  double seconds = 0;
  const std::string why = refusal(&seconds);
  EXPECT_NE(why.find("params.slots"), std::string::npos) << why;
  EXPECT_NE(why.find("at most"), std::string::npos) << why;
  EXPECT_LT(seconds, 5.0);
}

TEST_F(HugeListsTest, MoreSlotsThanParameterBytesAreRefused) {
  json j = original_;  // 8 parameter bytes
  json slots = json::array();
  for (size_t i = 0; i < 9; ++i) slots.push_back({{"offset", 0}, {"size", 0}});
  j["params"]["slots"] = slots;
  put(j);
  const std::string why = refusal();
  EXPECT_NE(why.find("params.slots"), std::string::npos) << why;
}

// 100,000 one-byte stored runs (a sparse region) read back through RegionBytes in one pass.
TEST_F(HugeListsTest, HundredThousandStoredRunsAreReadQuickly) {
  constexpr size_t kRuns = 100000;
  json j = original_;
  j["format_version"] = 2;
  j["regions"][0]["size"] = 2 * kRuns;
  json stored = json::array();
  for (size_t i = 0; i < kRuns; ++i) stored.push_back({2 * i, 1});
  j["regions"][0]["stored"] = stored;
  j["regions"][0].erase("xxh64");
  put(j);
  put_blob("mem/0.bin", std::vector<uint8_t>(kRuns, 3));
  const auto t0 = Clock::now();
  ASSERT_EQ(refusal(), "");
  const Capture c = open_capture(out_);
  RegionBytes in(c, c.manifest.regions[0]);
  std::vector<uint8_t> all(2 * kRuns);
  in.read_at(0, all.data(), all.size());
  EXPECT_EQ(all[0], 3);
  EXPECT_EQ(all[1], 0);
  for (uint64_t off = 0; off < all.size(); off += 4) in.read_at(off, all.data(), 4);  // many small reads
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5.0);
}

}  // namespace
}  // namespace kerncap::format
