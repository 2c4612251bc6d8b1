// A published capture is private whatever the umask: its directories are 0700, so the
// blobs inside (the application's memory) are readable by their owner only.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "storage/capture_writer.hpp"
#include "scratch_capture.hpp"

namespace kerncap::format {
namespace {

class PrivateCapture : public kerncap::testing::ScratchDir {};

mode_t mode_of(const fs::path& p) {
  struct stat st{};
  EXPECT_EQ(stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 0777;
}

TEST_F(PrivateCapture, DirectoriesArePrivateUnderUmaskZero) {
  const mode_t old = ::umask(0);
  fs::path published;
  {
    CaptureWriter w(out_, 4321);
    Manifest m;
    m.tool_version = "test";
    const std::vector<uint8_t> image(64, 0x7f), params(8, 1);
    w.write_image(m, image.data(), image.size(), 0xabcdef, "cubin");
    w.write_params(m, params.data(), params.size());
    published = w.publish(m);
  }
  ::umask(old);
  for (const char* d : {"", "mem", "image"}) EXPECT_EQ(mode_of(published / d), 0700u) << d;
}

TEST_F(PrivateCapture, FilesAndChunksArePrivateUnderUmaskZero) {
  const mode_t old = ::umask(0);
  fs::path published;
  const fs::path store = out_ / "store";
  {
    CaptureWriter w(out_, 99);
    w.set_chunk_store(store, kDefaultZstdLevel);
    Manifest m;
    m.tool_version = "test";
    const std::vector<uint8_t> image(64, 0x7f), params(8, 1), region(1 << 16, 3);
    w.write_image(m, image.data(), image.size(), 0xabcdef, "cubin");
    w.write_params(m, params.data(), params.size());
    m.regions.push_back({0, MemKind::Device, 0x7f0000000000ull, region.size(), "", 0, ""});
    RegionChunker chunker(w.chunks());
    chunker.add(0, region.data(), region.size());
    w.finish_chunks(m, {chunker.finish()});
    published = w.publish(m);
  }
  ::umask(old);
  EXPECT_EQ(mode_of(store), 0700u);
  size_t files = 0;
  for (const auto& root : {published, store})
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (e.is_directory()) {
        EXPECT_EQ(mode_of(e.path()), 0700u) << e.path();
      } else {
        EXPECT_EQ(mode_of(e.path()), 0600u) << e.path();
        ++files;
      }
    }
  EXPECT_GE(files, 4u);  // image, params, manifest, the chunk
}

}  // namespace
}  // namespace kerncap::format
