// The chunk store (format version 3): regions written as compressed, content-addressed
// chunks read back exactly through RegionBytes, equal chunks are kept once (in a capture and
// across captures sharing a store), and a hostile manifest or chunk file is an input error.
#include <gtest/gtest.h>

#include <xxhash.h>
#include <zstd.h>

#include <fstream>
#include <random>

#include "scratch_capture.hpp"
#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "format/chunk_store.hpp"
#include "format/region_bytes.hpp"

namespace kerncap::format {
namespace {

// 16 KiB: a compressible window, a random (incompressible) one, the compressible one again,
// a window of small integers.
std::vector<uint8_t> sample_data() {
  std::vector<uint8_t> d(16384);
  std::mt19937 rng(7);
  for (size_t i = 0; i < 4096; ++i) d[i] = static_cast<uint8_t>(i % 7 + 1);
  for (size_t i = 4096; i < 8192; ++i) d[i] = static_cast<uint8_t>(rng());
  std::copy(d.begin(), d.begin() + 4096, d.begin() + 8192);
  for (size_t i = 12288; i < 16384; ++i) d[i] = static_cast<uint8_t>(i % 3);
  return d;
}

class ChunkStoreTest : public kerncap::testing::ScratchDir {
 protected:
  fs::path dir() const { return out_ / kCaptureDirName; }

  std::vector<uint8_t> read_region(const Capture& c, size_t i = 0) {
    RegionBytes rb(c, c.manifest.regions[i]);
    std::vector<uint8_t> out(c.manifest.regions[i].size);
    rb.read_at(0, out.data(), out.size());
    return out;
  }

  void edit_manifest(const std::function<void(nlohmann::json&)>& f) {
    auto j = nlohmann::json::parse(std::ifstream(dir() / kManifestName));
    f(j);
    fs::remove(dir() / kManifestName);
    write_json_atomic(dir() / kManifestName, j);
  }

  // The input error open_capture or a full read gives ("" when both succeed).
  std::string refusal(const std::optional<fs::path>& store = std::nullopt) {
    try {
      const Capture c = open_capture(out_, store);
      for (size_t i = 0; i < c.manifest.regions.size(); ++i) (void)read_region(c, i);
      verify_blobs(c);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
      return e.what();
    }
    return "";
  }

  fs::path chunk_path(const Manifest& m, size_t k) const {
    return dir() / kChunkDir / chunk_file_name(m.regions[0].chunks.at(k));
  }
};

TEST_F(ChunkStoreTest, RoundTripCompressesDedupsAndKeepsRandomRaw) {
  const auto data = sample_data();
  const Manifest m = kerncap::testing::write_chunked_capture(out_, data);
  ASSERT_EQ(m.regions[0].chunks.size(), 4u);
  EXPECT_EQ(m.regions[0].chunks[0], m.regions[0].chunks[2]);  // the same content, one name
  EXPECT_FALSE(m.regions[0].chunks[0].raw());                 // compressed
  EXPECT_TRUE(m.regions[0].chunks[1].raw());                  // random bytes: kept as they are
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir() / kChunkDir)) files += e.is_regular_file();
  EXPECT_EQ(files, 3u);  // deduplicated

  const Capture c = open_capture(out_);
  EXPECT_EQ(c.manifest.format_version, 3);
  EXPECT_EQ(read_region(c), data);
  verify_blobs(c);
  // Pieces that cut chunks, across chunk edges, one byte.
  RegionBytes rb(c, c.manifest.regions[0]);
  std::vector<uint8_t> piece(5000);
  rb.read_at(3000, piece.data(), piece.size());
  EXPECT_TRUE(std::equal(piece.begin(), piece.end(), data.begin() + 3000));
  uint8_t one = 0;
  rb.read_at(16383, &one, 1);
  EXPECT_EQ(one, data[16383]);
}

TEST_F(ChunkStoreTest, SparseRunsShareWindowsAndZerosComeBack) {
  auto data = sample_data();
  std::fill(data.begin() + 100, data.begin() + 6000, 0);
  std::fill(data.begin() + 9000, data.end(), 0);
  const Manifest m = kerncap::testing::write_chunked_capture(out_, data, {{0, 100}, {6000, 3000}});
  // Windows of 4096: [0,100) in window 0, [6000,8192) in 1, [8192,9000) in 2.
  EXPECT_EQ(m.regions[0].chunks.size(), 3u);
  const Capture c = open_capture(out_);
  EXPECT_EQ(read_region(c), data);
  RegionBytes rb(c, c.manifest.regions[0]);
  EXPECT_EQ(rb.uniform_fill(100, 5900), std::optional<uint8_t>(0));
  EXPECT_EQ(rb.uniform_fill(99, 2), std::nullopt);
}

TEST_F(ChunkStoreTest, LargeReadsDecodeChunksInParallel) {
  std::vector<uint8_t> data(64 * 4096);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i / 4096) * 13 + i % 11);
  kerncap::testing::write_chunked_capture(out_, data);
  const Capture c = open_capture(out_);
  EXPECT_EQ(read_region(c), data);
}

TEST_F(ChunkStoreTest, VersionTwoCapturesStillRead) {
  kerncap::testing::write_small_capture(out_, 9);
  edit_manifest([](nlohmann::json& j) {
    j["format_version"] = 2;
    j["regions"][0]["stored"] = nlohmann::json::array({nlohmann::json::array({0, 256})});
  });
  const Capture c = open_capture(out_);
  EXPECT_EQ(c.manifest.format_version, 2);
  EXPECT_EQ(read_region(c), std::vector<uint8_t>(256, 9));
}

TEST_F(ChunkStoreTest, ChunksAreRefusedBeforeVersionThree) {
  kerncap::testing::write_chunked_capture(out_, sample_data());
  edit_manifest([](nlohmann::json& j) { j["format_version"] = 2; });
  EXPECT_NE(refusal().find("chunks came with version 3"), std::string::npos);
}

TEST_F(ChunkStoreTest, ChunkNamesAreHashesOnly) {
  kerncap::testing::write_chunked_capture(out_, sample_data());
  for (const std::string bad : {"../../../../etc/passwd", "0123456789ABCDEF0123456789ABCDEF",
                                "0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdef/",
                                "0123456789abcdef0123456789abcde\\"}) {
    auto saved = nlohmann::json::parse(std::ifstream(dir() / kManifestName));
    edit_manifest([&](nlohmann::json& j) { j["regions"][0]["chunks"][0][0] = bad; });
    EXPECT_NE(refusal().find("not a chunk name"), std::string::npos) << bad;
    edit_manifest([&](nlohmann::json& j) { j = saved; });
  }
}

TEST_F(ChunkStoreTest, SizeLiesAreRefused) {
  const Manifest m = kerncap::testing::write_chunked_capture(out_, sample_data());
  // The chunks no longer add up to the stored bytes.
  edit_manifest([](nlohmann::json& j) { j["regions"][0]["chunks"][3][1] = 4095; });
  EXPECT_NE(refusal().find("chunks hold"), std::string::npos);
  // Stored larger than the bytes; a chunk past the reader's bound.
  edit_manifest([](nlohmann::json& j) {
    j["regions"][0]["chunks"][3][1] = 4096;
    j["regions"][0]["chunks"][3][2] = 5000;
  });
  EXPECT_NE(refusal().find("chunks[3][2]"), std::string::npos);
  edit_manifest([](nlohmann::json& j) { j["regions"][0]["chunks"][3][1] = uint64_t{1} << 40; });
  EXPECT_NE(refusal(), "");
  // A file of another size than the manifest says.
  edit_manifest([&](nlohmann::json& j) {
    j["regions"][0]["chunks"][3][1] = 4096;
    j["regions"][0]["chunks"][3][2] = m.regions[0].chunks[3].stored;
  });
  EXPECT_EQ(refusal(), "");
  const fs::path f = chunk_path(m, 3);
  fs::resize_file(f, fs::file_size(f) + 1);
  EXPECT_NE(refusal().find("has " + std::to_string(m.regions[0].chunks[3].stored + 1) + " bytes"), std::string::npos);
}

TEST_F(ChunkStoreTest, OneNameOneContent) {
  kerncap::testing::write_chunked_capture(out_, sample_data());
  edit_manifest([](nlohmann::json& j) { j["regions"][0]["chunks"][2][2] = 7; });
  EXPECT_NE(refusal().find("other sizes"), std::string::npos);
}

TEST_F(ChunkStoreTest, ZstdBombAndLyingFramesAreRefusedBeforeDecompressing) {
  const Manifest m = kerncap::testing::write_chunked_capture(out_, sample_data());
  // A frame of 60 MiB of zeros (a few KiB) in place of chunk 0, which declares 4096 bytes.
  std::vector<uint8_t> zeros(size_t{60} << 20, 0), z(ZSTD_compressBound(zeros.size()));
  z.resize(ZSTD_compress(z.data(), z.size(), zeros.data(), zeros.size(), 1));
  const fs::path f = chunk_path(m, 0);
  fs::remove(f);
  write_file(f, z.data(), z.size());
  edit_manifest([&](nlohmann::json& j) { j["regions"][0]["chunks"][0][2] = z.size(); j["regions"][0]["chunks"][2][2] = z.size(); });
  EXPECT_NE(refusal().find("declares 62914560 bytes, the manifest says 4096"), std::string::npos);

  // A frame that does not declare its size (streamed).
  std::vector<uint8_t> four(4096, 1), s(ZSTD_compressBound(4096) + 64);
  ZSTD_CCtx* cc = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
  s.resize(ZSTD_compress2(cc, s.data(), s.size(), four.data(), four.size()));
  ZSTD_freeCCtx(cc);
  fs::remove(f);
  write_file(f, s.data(), s.size());
  edit_manifest([&](nlohmann::json& j) { j["regions"][0]["chunks"][0][2] = s.size(); j["regions"][0]["chunks"][2][2] = s.size(); });
  EXPECT_NE(refusal().find("does not declare its size"), std::string::npos);

  // Not zstd at all.
  std::vector<uint8_t> junk(100, 0x42);
  fs::remove(f);
  write_file(f, junk.data(), junk.size());
  edit_manifest([&](nlohmann::json& j) { j["regions"][0]["chunks"][0][2] = 100; j["regions"][0]["chunks"][2][2] = 100; });
  EXPECT_NE(refusal().find("not a zstd frame"), std::string::npos);
}

TEST_F(ChunkStoreTest, HashMismatchIsRefusedOnRead) {
  const Manifest m = kerncap::testing::write_chunked_capture(out_, sample_data());
  const fs::path f = chunk_path(m, 1);  // raw
  std::vector<uint8_t> bytes = read_file(f);
  bytes[10] ^= 1;
  fs::remove(f);
  write_file(f, bytes.data(), bytes.size());
  EXPECT_NO_THROW(open_capture(out_));  // sizes only
  EXPECT_NE(refusal().find("does not match its name"), std::string::npos);
}

TEST_F(ChunkStoreTest, LinksAreNotFollowed) {
  const Manifest m = kerncap::testing::write_chunked_capture(out_, sample_data());
  const fs::path f = chunk_path(m, 1);
  const fs::path elsewhere = out_ / "elsewhere.raw";
  fs::copy_file(f, elsewhere);
  fs::remove(f);
  fs::create_symlink(elsewhere, f);
  EXPECT_NE(refusal().find("link"), std::string::npos);
}

TEST_F(ChunkStoreTest, SharedStoreIsNamedByTheUserAndKeepsChunksOnce) {
  const fs::path store = out_ / "store";
  const auto data = sample_data();
  const Manifest m = kerncap::testing::write_chunked_capture(out_ / "a", data, {}, 4096, store);
  EXPECT_TRUE(m.external_store);
  EXPECT_FALSE(fs::exists(out_ / "a" / kCaptureDirName / kChunkDir));
  const auto before = std::distance(fs::directory_iterator(store), fs::directory_iterator());
  kerncap::testing::write_chunked_capture(out_ / "b", data, {}, 4096, store);
  EXPECT_EQ(std::distance(fs::directory_iterator(store), fs::directory_iterator()), before);  // nothing new

  // Without the store: opens (info works), reading asks for --store.
  const Capture blind = open_capture(out_ / "b", std::nullopt);
  try {
    (void)read_region(blind);
    ADD_FAILURE() << "read without the store";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("--store DIR"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(store.string()), std::string::npos) << e.what();  // the hint
  }
  const Capture c = open_capture(out_ / "b", store);
  EXPECT_EQ(read_region(c), data);
  // A wrong store: the chunk is missing there.
  fs::create_directories(out_ / "empty");
  try {
    (void)open_capture(out_ / "b", out_ / "empty");
    ADD_FAILURE() << "opened with an empty store";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
  }
}

TEST_F(ChunkStoreTest, StoreHintWithControlCharactersIsRefused) {
  kerncap::testing::write_chunked_capture(out_, sample_data());
  edit_manifest([](nlohmann::json& j) { j["chunk_store"] = {{"external", true}, {"hint", "a\x1b[31mb"}}; });
  EXPECT_NE(refusal().find("control character"), std::string::npos);
}

TEST_F(ChunkStoreTest, PrunedRangesReadAsFill) {
  auto data = sample_data();
  kerncap::testing::write_chunked_capture(out_, data, {{0, 4096}, {12288, 4096}});
  edit_manifest([](nlohmann::json& j) {
    j["regions"][0]["pruned"] = nlohmann::json::array({nlohmann::json::array({4096, 4096})});
  });
  const Capture c = open_capture(out_);
  const auto got = read_region(c);
  for (size_t i = 4096; i < 8192; ++i) ASSERT_EQ(got[i], kOmittedFill) << i;
  for (size_t i = 8192; i < 12288; ++i) ASSERT_EQ(got[i], 0) << i;
  RegionBytes rb(c, c.manifest.regions[0]);
  EXPECT_EQ(rb.uniform_fill(4096, 4096), std::optional<uint8_t>(kOmittedFill));
  EXPECT_EQ(rb.uniform_fill(4096, 8192), std::nullopt);  // pruned and zeros side by side
  EXPECT_EQ(rb.uniform_fill(8192, 4096), std::optional<uint8_t>(0));
  // Pruned ranges may not overlap stored runs, leave the region or go backwards.
  edit_manifest([](nlohmann::json& j) {
    j["regions"][0]["pruned"] = nlohmann::json::array({nlohmann::json::array({4000, 200})});
  });
  EXPECT_NE(refusal().find("overlaps a stored run"), std::string::npos);
  edit_manifest([](nlohmann::json& j) {
    j["regions"][0]["pruned"] = nlohmann::json::array({nlohmann::json::array({16000, 1000})});
  });
  EXPECT_NE(refusal().find("outside the region"), std::string::npos);
}

}  // namespace
}  // namespace kerncap::format
