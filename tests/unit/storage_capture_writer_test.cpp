// The capture writer: the layout it produces is what the reader accepts, nothing looks
// like a capture before publish(), and an abandoned writer leaves no partial directory.
#include <gtest/gtest.h>

#include <unistd.h>
#include <xxhash.h>

#include <cstdio>

#include <atomic>

#include "scratch_capture.hpp"
#include "storage/capture_writer.hpp"
#include "format/out_layout.hpp"

namespace kerncap::format {
namespace {

class CaptureWriterTest : public kerncap::testing::ScratchDir {
 protected:

  // Writes one region, the image, params and one AFTER run, as the capturer does.
  Manifest fill(CaptureWriter& w) {
    Manifest m;
    m.tool_version = "test";
    m.mangled_name = "_Z1kPf";
    const std::vector<uint8_t> image(64, 0x7f), params(8, 1), region(128, 2), changed(16, 3);
    image_hash_ = XXH3_64bits(image.data(), image.size());  // the reader checks it
    w.write_image(m, image.data(), image.size(), image_hash_, "cubin");
    m.params = {{0, 8}};
    w.write_params(m, params.data(), params.size());
    m.regions.push_back({0, MemKind::Device, 0x7f0000000000ull, region.size(), CaptureWriter::region_file(0), 0, ""});
    write_file(w.dir() / m.regions[0].file, region.data(), region.size());
    BlobWriter after = w.open_after(m);
    after.write(changed.data(), changed.size());
    after.close();
    m.after = {{0, 32, 16, 0}};
    return m;
  }

  uint64_t image_hash_ = 0;
};

TEST_F(CaptureWriterTest, PublishesTheLayoutTheReaderAccepts) {
  CaptureWriter w(out_, 1234);
  EXPECT_EQ(w.dir(), out_ / "capture.partial-1234");
  Manifest m = fill(w);
  char name[64];
  std::snprintf(name, sizeof name, "image/%016llx.cubin", static_cast<unsigned long long>(image_hash_));
  EXPECT_EQ(m.image_file, name);  // unchanged on-disk names
  EXPECT_EQ(m.regions[0].file, "mem/0.bin");
  EXPECT_EQ(m.params_size, 8u);
  EXPECT_FALSE(fs::exists(out_ / "capture"));  // nothing looks complete before publish
  EXPECT_EQ(w.publish(m), out_ / "capture");
  EXPECT_FALSE(fs::exists(out_ / "capture.partial-1234"));
  Capture c = open_capture(out_);
  EXPECT_EQ(c.manifest.mangled_name, "_Z1kPf");
  EXPECT_EQ(c.manifest.image_kind, "cubin");
  EXPECT_TRUE(fs::exists(out_ / "capture" / "params.bin"));
  EXPECT_TRUE(fs::exists(out_ / "capture" / "after.bin"));
}

TEST_F(CaptureWriterTest, AnAbandonedWriterLeavesNothing) {
  {
    CaptureWriter w(out_, 77);
    fill(w);
    EXPECT_TRUE(fs::exists(out_ / "capture.partial-77" / "mem" / "0.bin"));
  }
  EXPECT_TRUE(fs::is_empty(out_));
}

TEST_F(CaptureWriterTest, ReplacesAnOlderCaptureAndAStalePartial) {
  fs::create_directories(out_ / "capture" / "old");
  fs::create_directories(out_ / "capture.partial-5" / "junk");
  CaptureWriter w(out_, 5);
  EXPECT_FALSE(fs::exists(out_ / "capture.partial-5" / "junk"));
  w.publish(fill(w));
  EXPECT_FALSE(fs::exists(out_ / "capture" / "old"));
}

TEST(FormatOutLayout, NamesAndWhatForceReplaces) {
  const fs::path out = "/o";
  EXPECT_EQ(out::events_file(out, 9), fs::path("/o/.kerncap/events-9.jsonl"));
  EXPECT_EQ(out::claim_file(out), fs::path("/o/.kerncap/claim"));
  EXPECT_EQ(out::partial_dir(out, 9), fs::path("/o/capture.partial-9"));
  EXPECT_TRUE(out::is_events_file("events-12.jsonl"));
  EXPECT_FALSE(out::is_events_file("profile-12.jsonl"));
  for (const char* n : {"capture", ".kerncap", "capture.partial-3", "triton", "kernel_variant.py", "reproducer.py",
                        "kerncap_repro", "candidate.cubin", "candidate.json", "compare.json"})
    EXPECT_TRUE(out::force_replaced(n)) << n;  // compare.json: its spans name the old capture's addresses
  // The user's work and files kerncap never wrote survive --force.
  for (const char* n : {"kernel_variant.cu", "src", "optimized.cubin", "notes.txt", "Makefile"})
    EXPECT_FALSE(out::force_replaced(n)) << n;
}


// BEFORE as the capture library writes it from version 3: chunks through the writer's pool,
// in the capture (private) or in a shared store that a second capture reuses.
TEST_F(CaptureWriterTest, ChunksGoToTheCaptureOrToASharedStore) {
  const fs::path store = out_ / "store";
  for (const bool shared : {false, true, true}) {
    const fs::path out = out_ / (shared ? "shared" : "local");
    CaptureWriter w(out, 9);
    if (shared) w.set_chunk_store(store, kDefaultZstdLevel);
    Manifest m = fill(w);
    std::vector<uint8_t> region(128, 2);
    m.regions[0].file.clear();
    RegionChunker chunker(w.chunks());
    chunker.add(0, region.data(), region.size());
    const ChunkStats st = w.finish_chunks(m, {chunker.finish()});
    EXPECT_EQ(st.chunks, 1u);
    EXPECT_EQ(m.format_version, 3);  // no textures: readable by older kerncaps
    EXPECT_EQ(m.external_store, shared);
    w.publish(m);
    const Capture c = open_capture(out, shared ? std::optional<fs::path>(store) : std::nullopt);
    ASSERT_EQ(c.manifest.regions[0].chunks.size(), 1u);
    EXPECT_LT(c.manifest.regions[0].chunks[0].stored, 128u);  // 128 equal bytes compress
    EXPECT_EQ(fs::exists(out / "capture" / kChunkDir), !shared);
    if (!shared) {
      EXPECT_EQ(static_cast<unsigned>(fs::status(out / "capture" / kChunkDir).permissions()) & 0777u, 0700u);
    }
  }
  // The second shared capture found its chunk there: one file.
  EXPECT_EQ(std::distance(fs::directory_iterator(store), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace kerncap::format
