// Sparse regions (format version 2): a region's file holds only the runs that were not
// zero. Reading gives back the application's bytes; crafted run lists are refused.
#include <gtest/gtest.h>

#include <xxhash.h>

#include <fstream>

#include "scratch_capture.hpp"
#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "format/region_bytes.hpp"

namespace kerncap::format {
namespace {

class SparseRegionTest : public kerncap::testing::ScratchDir {
 protected:
  fs::path dir() const { return out_ / kCaptureDirName; }

  // Region 0: 4096 bytes, of which [512, 768) and [2048, 2052) were stored (0x11, 0x22).
  Manifest write_sparse(std::vector<StoredRun> runs = {{512, 256}, {2048, 4}}) {
    Manifest m = kerncap::testing::write_small_capture(out_);
    m.regions[0].size = 4096;
    m.regions[0].stored = runs;
    std::vector<uint8_t> file;
    for (size_t k = 0; k < runs.size(); ++k) file.insert(file.end(), runs[k].size, uint8_t(0x11 * (k + 1)));
    fs::remove(dir() / m.regions[0].file);
    write_file(dir() / m.regions[0].file, file.data(), file.size());
    m.regions[0].xxh64 = XXH64(file.data(), file.size(), 0);
    m.after.clear();
    fs::remove(dir() / m.after_file);
    write_file(dir() / m.after_file, nullptr, 0);
    fs::remove(dir() / kManifestName);
    write_json_atomic(dir() / kManifestName, to_json(m));
    return m;
  }

  std::string refusal() {
    try {
      open_capture(out_);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
      return e.what();
    }
    return "";
  }

  void edit_manifest(const std::function<void(nlohmann::json&)>& f) {
    auto j = nlohmann::json::parse(std::ifstream(dir() / kManifestName));
    f(j);
    fs::remove(dir() / kManifestName);
    write_json_atomic(dir() / kManifestName, j);
  }
};

TEST_F(SparseRegionTest, ReadsBackZerosAndStoredRuns) {
  write_sparse();
  const Capture c = open_capture(out_);
  ASSERT_TRUE(c.manifest.regions[0].stored.has_value());
  EXPECT_EQ(c.manifest.format_version, kFormatVersion);
  EXPECT_EQ(stored_bytes(c.manifest.regions[0]), 260u);
  RegionBytes r(c, c.manifest.regions[0]);
  std::vector<uint8_t> all(4096, 0xEE);
  uint64_t hashed = 0;
  r.on_file_bytes = [&](const uint8_t*, uint64_t n) { hashed += n; };
  r.read_at(0, all.data(), all.size());
  EXPECT_EQ(hashed, 260u);  // only file bytes reach the hash
  for (size_t i = 0; i < all.size(); ++i) {
    const uint8_t want = (i >= 512 && i < 768) ? 0x11 : (i >= 2048 && i < 2052) ? 0x22 : 0;
    ASSERT_EQ(all[i], want) << "byte " << i;
  }
  // A window that starts inside one run and ends inside a gap.
  std::vector<uint8_t> part(300, 0xEE);
  r.read_at(700, part.data(), part.size());
  EXPECT_EQ(part[0], 0x11);
  EXPECT_EQ(part[67], 0x11);
  EXPECT_EQ(part[68], 0);
  EXPECT_TRUE(r.unstored(0, 512));
  EXPECT_FALSE(r.unstored(0, 513));
  EXPECT_TRUE(r.unstored(768, 2048 - 768));
  EXPECT_FALSE(r.unstored(2051, 100));
  EXPECT_TRUE(r.unstored(2052, 4096 - 2052));
  verify_blobs(c);  // the recorded hash is the file's
}

TEST_F(SparseRegionTest, AllZeroRegionStoresNothing) {
  write_sparse({});
  const Capture c = open_capture(out_);
  ASSERT_TRUE(c.manifest.regions[0].stored.has_value());
  EXPECT_TRUE(c.manifest.regions[0].stored->empty());
  RegionBytes r(c, c.manifest.regions[0]);
  std::vector<uint8_t> all(4096, 0xEE);
  r.read_at(0, all.data(), all.size());
  EXPECT_EQ(all, std::vector<uint8_t>(4096, 0));
}

TEST_F(SparseRegionTest, FileSizeMustMatchTheStoredRuns) {
  write_sparse();
  fs::resize_file(dir() / "mem/0.bin", 259);
  EXPECT_NE(refusal().find("truncated"), std::string::npos);
}

TEST_F(SparseRegionTest, CraftedRunsAreRefused) {
  write_sparse();
  edit_manifest([](nlohmann::json& j) { j["regions"][0]["stored"] = {{4000, 200}}; });
  EXPECT_NE(refusal().find("ends past the region"), std::string::npos) << refusal();
  edit_manifest([](nlohmann::json& j) { j["regions"][0]["stored"] = {{512, 256}, {600, 4}}; });
  EXPECT_NE(refusal().find("is not after the previous run"), std::string::npos) << refusal();
  edit_manifest([](nlohmann::json& j) { j["regions"][0]["stored"] = {{UINT64_MAX, 2}}; });
  EXPECT_NE(refusal().find("stored[0]"), std::string::npos) << refusal();
  edit_manifest([](nlohmann::json& j) { j["regions"][0]["stored"] = {{512}}; });
  EXPECT_NE(refusal().find("expected [offset, size]"), std::string::npos) << refusal();
  edit_manifest([](nlohmann::json& j) { j["regions"][0]["stored"] = {{512, 0}}; });
  EXPECT_FALSE(refusal().empty());  // an empty run is no run
}

TEST_F(SparseRegionTest, VersionOneCapturesStillOpenButCannotBeSparse) {
  write_sparse();
  edit_manifest([](nlohmann::json& j) { j["format_version"] = 1; });
  EXPECT_NE(refusal().find("format version 1"), std::string::npos) << refusal();
  // A version 1 capture without sparse regions (as kerncap wrote them before) opens.
  Manifest m = kerncap::testing::write_small_capture(out_ / "v1");
  auto j = to_json(m);
  j["format_version"] = 1;
  fs::remove(out_ / "v1" / kCaptureDirName / kManifestName);
  write_json_atomic(out_ / "v1" / kCaptureDirName / kManifestName, j);
  EXPECT_EQ(open_capture(out_ / "v1").manifest.format_version, 1);
}

}  // namespace
}  // namespace kerncap::format
