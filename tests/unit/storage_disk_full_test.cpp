// Issue 38's fault matrix, the rows a CPU runs: the disk fills while a capture writes its
// BEFORE chunks into a shared store. The file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes
// every write past it fail with EFBIG, as a full file system fails with ENOSPC: the same write
// error to the writer. Expected: a clear Error(Device) naming the write; no capture published
// and no partial directory left; nothing half-written in the store (no file under a chunk's
// name whose bytes are not that chunk, no temporary left); the chunks an earlier capture put
// in the store intact, and a later capture without the limit completes and reads back.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <functional>
#include <fstream>
#include <random>

#include "file_limit_child.hpp"
#include "common/error.hpp"
#include "common/private_files.hpp"
#include "format/chunk_store.hpp"
#include "format/out_layout.hpp"
#include "scratch_capture.hpp"
#include "storage/capture_writer.hpp"

namespace kerncap::format {
namespace {

class DiskFullTest : public kerncap::testing::ScratchDir {
 protected:
  // One capture of `region` into OUT `out`, its chunks into `store` (raw: level 0, so the
  // bytes on disk are the region's and the test can hash them).
  static void capture(const fs::path& out, const fs::path& store, const std::vector<uint8_t>& region) {
    CaptureWriter w(out, static_cast<int>(::getpid()));
    w.set_chunk_store(store, 0);
    Manifest m;
    m.tool_version = "test";
    m.mangled_name = "_Z1kPf";
    const std::vector<uint8_t> image(64, 0x7f), params(8, 1);
    w.write_image(m, image.data(), image.size(), XXH3_64bits(image.data(), image.size()), "cubin");
    m.params = {{0, 8}};
    w.write_params(m, params.data(), params.size());
    m.regions.push_back({0, MemKind::Device, 0x7f0000000000ull, region.size(), "", 0, ""});
    BlobWriter after = w.open_after(m);
    after.close();
    RegionChunker chunker(w.chunks());
    chunker.add(0, region.data(), region.size());
    w.finish_chunks(m, {chunker.finish()});
    w.publish(m);
  }

  static std::vector<uint8_t> noise(size_t n, unsigned seed) {  // incompressible
    std::mt19937_64 g(seed);
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i + 8 <= n; i += 8) {
      const uint64_t x = g();
      std::memcpy(v.data() + i, &x, 8);
    }
    return v;
  }

  // Every file of the store is a whole chunk under its own name (its XXH3-128 in hex).
  static std::vector<std::string> bad_store_files(const fs::path& store) {
    std::vector<std::string> bad;
    for (const auto& e : fs::directory_iterator(store)) {
      const std::string name = e.path().filename().string();
      ChunkRef ref;
      if (name.size() != 36 || name.substr(32) != ".raw" || !parse_chunk_hash(name.substr(0, 32), ref)) {
        bad.push_back(name + " (not a chunk's name)");
        continue;
      }
      std::ifstream in(e.path(), std::ios::binary);
      const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
      if (h.high64 != ref.hash_hi || h.low64 != ref.hash_lo) bad.push_back(name + " (its bytes are not that chunk)");
    }
    return bad;
  }
};

// Runs `work` in a child whose files may not grow past `limit` bytes (writes beyond fail with
// EFBIG, as a full disk fails with ENOSPC); returns "device: <message>" for an Error(Device),
// another kind's name and message, or "" when `work` did not throw.
std::string in_full_disk(const fs::path&, uint64_t limit, const std::function<void()>& work) {
  return kerncap::testing::in_child_with_file_limit(limit, work);
}

TEST_F(DiskFullTest, AFullDiskDuringChunkWritesLeavesNoCaptureAndAnIntactStore) {
  const fs::path store = out_ / "store";
  capture(out_ / "first", store, noise(1 << 20, 1));  // an earlier capture's chunks
  ASSERT_TRUE(bad_store_files(store).empty());
  const size_t before = static_cast<size_t>(std::distance(fs::directory_iterator(store), fs::directory_iterator()));

  const fs::path out = out_ / "second";
  // 6 MiB of new bytes against a 2 MiB file-size limit.
  const std::string what = in_full_disk(out_, 2 << 20, [&] { capture(out, store, noise(6 << 20, 2)); });
  EXPECT_EQ(what.rfind("device: ", 0), 0u) << "the full disk was not an Error(Device): " << what;
  EXPECT_NE(what.find("too large"), std::string::npos) << what;  // EFBIG's text: what happened

  // Nothing looks like a capture; nothing half-written stays where a reader would take it.
  EXPECT_FALSE(fs::exists(out / out::kCapture));
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_FALSE(out::is_partial(e.path().filename().string())) << e.path();
  EXPECT_EQ(bad_store_files(store), std::vector<std::string>{});
  // The earlier capture still opens (its chunk files there, whole: checked above).
  EXPECT_NO_THROW(open_capture(out_ / "first", store));
  EXPECT_GE(static_cast<size_t>(std::distance(fs::directory_iterator(store), fs::directory_iterator())), before);

  // With room again, the same capture completes.
  capture(out, store, noise(6 << 20, 2));
  EXPECT_TRUE(fs::exists(out / out::kCapture));
  EXPECT_EQ(bad_store_files(store), std::vector<std::string>{});
}

TEST_F(DiskFullTest, AWriterKilledMidChunksLeavesOnlyWholeChunksAndAPartialTheLauncherRemoves) {
  const fs::path store = out_ / "store";
  const fs::path out = out_ / "killed";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    capture(out, store, noise(size_t{96} << 20, 3));  // 24 chunks: long enough to be killed inside
    ::_exit(0);
  }
  // Kill it once some chunks are in the store, while others are being written.
  for (int i = 0; i < 30000; ++i) {
    std::error_code ec;
    if (fs::is_directory(store, ec) &&
        std::distance(fs::directory_iterator(store, ec), fs::directory_iterator()) >= 3)
      break;
    ::usleep(1000);
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer finished before it was killed: the test proves nothing";
  EXPECT_FALSE(fs::exists(out / out::kCapture));
  // Under a chunk's name only whole chunks (rename publishes them); temporaries may stay, named
  // so that no reader takes them for a chunk.
  std::vector<std::string> bad;
  for (const auto& b : bad_store_files(store))
    if (b.front() != '.') bad.push_back(b);
  EXPECT_EQ(bad, std::vector<std::string>{});
  // The launcher's clean-up after the application ended removes the partial capture and says so.
  EXPECT_EQ(abandon_partials(out, "killed by a test"), 1u);
  EXPECT_TRUE(fs::exists(out / out::kCaptureFailed));
  capture(out, store, noise(size_t{8} << 20, 4));
  EXPECT_TRUE(fs::exists(out / out::kCapture));
}

TEST_F(DiskFullTest, AFullDiskDuringAfterLeavesNoCapture) {
  const fs::path out = out_ / "after";
  const std::string what = in_full_disk(out_, 1 << 20, [&] {
    CaptureWriter w(out, 11);
    Manifest m;
    m.tool_version = "test";
    m.mangled_name = "_Z1kPf";
    const std::vector<uint8_t> image(64, 0x7f), params(8, 1);
    w.write_image(m, image.data(), image.size(), XXH3_64bits(image.data(), image.size()), "cubin");
    m.params = {{0, 8}};
    w.write_params(m, params.data(), params.size());
    const std::vector<uint8_t> changed = noise(4 << 20, 5);
    BlobWriter after = w.open_after(m);
    after.write(changed.data(), changed.size());  // past the limit
    after.close();
    w.publish(m);
  });
  EXPECT_EQ(what.rfind("device: ", 0), 0u) << what;
  EXPECT_NE(what.find("too large"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(out / out::kCapture));
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_FALSE(out::is_partial(e.path().filename().string())) << e.path();
}

TEST_F(DiskFullTest, AFileReplacedOnAFullDiskKeepsItsOldContentsAndNoTemporary) {
  // How regimes.json and kerncap.toml's defaults are written (the footprint's pair: footprint_write_faults_test.cpp).
  const fs::path file = out_ / "footprint.bin";
  files::replace_file(file, "old contents");
  const std::string what =
      in_full_disk(out_, 1 << 16, [&] { files::replace_file(file, std::string(size_t{1} << 20, 'x')); });
  EXPECT_FALSE(what.empty()) << "the write past the limit did not fail";
  EXPECT_NE(what.find("too large"), std::string::npos) << what;
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), "old contents");
  EXPECT_FALSE(fs::exists(out_ / "footprint.bin.tmp"));
}

}  // namespace
}  // namespace kerncap::format
