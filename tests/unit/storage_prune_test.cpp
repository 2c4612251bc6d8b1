// `kerncap prune` on a synthetic footprint: untouched bytes leave the capture (recorded as
// pruned, read back as 0xCB), touched ones stay exact, unreferenced chunks are deleted, a
// dry run changes nothing, and without a footprint prune refuses.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <fstream>
#include <optional>
#include <set>

#include "prune_footprint.hpp"
#include "scratch_capture.hpp"
#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "format/footprint.hpp"
#include "storage/prune.hpp"
#include "format/region_bytes.hpp"

namespace kerncap::format {
namespace {

constexpr uint64_t kSize = uint64_t{1} << 20;

class PruneTest : public kerncap::testing::ScratchDir {
 protected:
  fs::path dir() const { return out_ / kCaptureDirName; }

  std::vector<uint8_t> data() const {
    std::vector<uint8_t> d(kSize);
    for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(i * 2654435761u >> 13 | 1);
    return d;
  }

  Footprint footprint(const Manifest& m) const { return kerncap::testing::prune_test_footprint(m, kSize); }

  size_t chunk_files() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir() / kChunkDir)) n += e.is_regular_file();
    return n;
  }
};

TEST_F(PruneTest, RefusesWithoutAFootprint) {
  kerncap::testing::write_chunked_capture(out_, data(), {}, kChunkWindow);
  try {
    prune_capture(out_, false);
    FAIL() << "pruned without a footprint";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("kerncap footprint OUT"), std::string::npos) << e.what();
  }
}

// OUT/capture as a symbolic link to another capture: prune refuses, and that capture keeps its
// manifest and every chunk (issue 38's fuzz run found the other capture rewritten).
TEST_F(PruneTest, RefusesACaptureReachedThroughASymbolicLink) {
  const Manifest m = kerncap::testing::write_chunked_capture(out_, data(), {}, uint64_t{64} << 10);
  write_footprint(dir(), footprint(m));
  const size_t files_before = chunk_files();
  const fs::path other = out_.parent_path() / (out_.filename().string() + "-linked");
  fs::create_directories(other);
  fs::create_directory_symlink(dir(), other / kCaptureDirName);
  for (const fs::path& target : {other, other / kCaptureDirName}) {
    try {
      prune_capture(target, false);
      ADD_FAILURE() << "pruned through a link: " << target;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input);
      EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(chunk_files(), files_before);
  fs::remove_all(other);
}

TEST_F(PruneTest, DropsUntouchedBytesAndKeepsTouchedOnesExact) {
  const auto d = data();
  const Manifest m = kerncap::testing::write_chunked_capture(out_, d, {}, uint64_t{64} << 10);  // 16 chunks
  write_footprint(dir(), footprint(m));
  const size_t files_before = chunk_files();

  const PruneResult dry = prune_capture(out_, true);
  EXPECT_TRUE(dry.plan.changed());
  EXPECT_NE(dry.summary.find("would prune"), std::string::npos) << dry.summary;
  EXPECT_EQ(chunk_files(), files_before);
  EXPECT_TRUE(open_capture(out_).manifest.regions[0].pruned.empty());

  const PruneResult r = prune_capture(out_, false);
  // Kept: [0, 8 KiB) and [512 KiB, 520 KiB) and [600 KiB, 604 KiB): widened to 4 KiB, the
  // gaps between them longer than 64 KiB.
  std::optional<Capture> opened = open_capture(out_);  // closed before the next prune (it holds the lock)
  const Capture& c = *opened;
  const Region& reg = c.manifest.regions[0];
  ASSERT_TRUE(reg.stored.has_value());
  ASSERT_EQ(reg.stored->size(), 3u);
  EXPECT_EQ((*reg.stored)[0].offset, 0u);
  EXPECT_EQ((*reg.stored)[0].size, 8192u);
  EXPECT_EQ((*reg.stored)[1].offset, 512u * 1024);
  EXPECT_EQ((*reg.stored)[2].offset, 600u * 1024);
  EXPECT_EQ((*reg.stored)[2].size, 4096u);
  EXPECT_EQ(stored_bytes(reg) + pruned_bytes(reg), kSize);
  EXPECT_EQ(r.plan.stored_before, kSize);
  EXPECT_EQ(r.plan.stored_after, stored_bytes(reg));
  EXPECT_GT(r.files_deleted, 0u);
  EXPECT_LT(chunk_files(), files_before);
  EXPECT_EQ(chunk_files(), reg.chunks.size());

  RegionBytes rb(c, reg);
  std::vector<uint8_t> got(kSize);
  rb.read_at(0, got.data(), got.size());
  for (const auto& s : *reg.stored)
    EXPECT_TRUE(std::equal(got.begin() + s.offset, got.begin() + s.offset + s.size, d.begin() + s.offset));
  EXPECT_EQ(got[8192], kOmittedFill);
  EXPECT_EQ(got[kSize - 1], kOmittedFill);
  verify_blobs(c);  // the new hash of the stored bytes

  // Again: nothing left to prune.
  opened.reset();
  const PruneResult again = prune_capture(out_, false);
  EXPECT_FALSE(again.plan.changed());
  EXPECT_NE(again.summary.find("nothing to prune"), std::string::npos);
}

TEST_F(PruneTest, FileRegionsBecomeChunkedAndTheirFilesGo) {
  // write_small_capture: one 256-byte region stored in mem/0.bin, which the launch never touches.
  const Manifest m = kerncap::testing::write_small_capture(out_, 5);
  Footprint f;
  f.kernel = m.mangled_name;
  f.image_hash = m.image_hash;
  RegionFootprint r;
  r.id = 0;
  r.size = 256;
  r.read = Bitmap(4, 256);
  r.written = Bitmap(1, 256);
  r.rbw = Bitmap(4, 256);  // no access at all
  f.regions.push_back(std::move(r));
  write_footprint(dir(), f);
  prune_capture(out_, false);
  const Capture c = open_capture(out_);
  EXPECT_EQ(c.manifest.format_version, 3);  // no textures: readable by older kerncaps
  EXPECT_TRUE(c.manifest.regions[0].file.empty());
  EXPECT_FALSE(fs::exists(dir() / "mem/0.bin"));
  RegionBytes rb(c, c.manifest.regions[0]);
  std::vector<uint8_t> got(256);
  rb.read_at(0, got.data(), got.size());
  EXPECT_EQ(got, std::vector<uint8_t>(256, kOmittedFill));
  EXPECT_TRUE(c.manifest.regions[0].chunks.empty());
}

TEST_F(PruneTest, ProbedFootprintsKeepRegionsWithoutRecordedAccess) {
  const Manifest m = kerncap::testing::write_chunked_capture(out_, data(), {}, kChunkWindow);
  Footprint f = footprint(m);
  f.regions[0].read = Bitmap(4, kSize);
  f.regions[0].written = Bitmap(1, kSize);
  f.regions[0].probed = true;
  const PrunePlan p = plan_prune(m, f);
  EXPECT_FALSE(p.changed());
  EXPECT_NE(p.regions[0].kept_whole.find("TMA"), std::string::npos);
}

TEST_F(PruneTest, FootprintOfAnotherCaptureIsRefused) {
  const Manifest m = kerncap::testing::write_chunked_capture(out_, data(), {}, kChunkWindow);
  Footprint f = footprint(m);
  f.regions[0].size = 4096;
  EXPECT_THROW(plan_prune(m, f), Error);
}

TEST_F(PruneTest, AFullDiskDuringPruneLeavesTheCaptureWholeAndReadable) {
  // Issue 38's fault matrix, a CPU row: prune writes the kept runs as new chunks and then the
  // manifest, and deletes old chunks last. Writes past a 256-byte file-size limit fail with EFBIG
  // (as ENOSPC would): prune must fail with Error(Device) and leave the capture as it was.
  const auto d = data();
  kerncap::testing::write_chunked_capture(out_, d, {}, uint64_t{64} << 10);
  const Manifest m = open_capture(out_).manifest;
  write_footprint(dir(), footprint(m));
  const size_t files_before = chunk_files();
  const std::string message_file = (out_ / "child-message").string();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{256, 256};  // the manifest (some KiB) cannot be written
    ::setrlimit(RLIMIT_FSIZE, &lim);
    std::string what = "no error";
    try {
      prune_capture(out_, false);
    } catch (const Error& e) {
      what = std::string(e.kind() == ErrorKind::Device ? "device: " : "other kind: ") + e.what();
    }
    std::ofstream(message_file) << what;
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::ifstream in(message_file);
  const std::string what((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(what.rfind("device: ", 0), 0u) << what;
  // The capture opens as before, every byte of it there, no chunk of it gone.
  {
    const Capture c = open_capture(out_);
    const Region& reg = c.manifest.regions[0];
    EXPECT_TRUE(reg.pruned.empty());
    std::vector<uint8_t> got(kSize);
    RegionBytes(c, reg).read_at(0, got.data(), got.size());
    EXPECT_EQ(got, d);
    EXPECT_GE(chunk_files(), files_before);
    verify_blobs(c);
  }  // closed: prune waits for every open copy of the capture
  // With room again, prune completes.
  EXPECT_TRUE(prune_capture(out_, false).plan.changed());
}

// Fault matrix (issue 38): a prune that starts while another process holds the capture open
// (validate, serve) waits for it, so the reader reads the manifest it opened with every chunk
// it names; the prune then completes. Before the capture lock, prune deleted the chunks the
// reader's manifest named.
TEST_F(PruneTest, WaitsForAReaderInAnotherProcess) {
  const auto d = data();
  const Manifest m = kerncap::testing::write_chunked_capture(out_, d, {}, uint64_t{64} << 10);
  write_footprint(dir(), footprint(m));
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int rc = 1;
    try {
      const Capture c = open_capture(out_);
      (void)!::write(ready[1], "r", 1);
      ::usleep(600 * 1000);  // prune is waiting now
      std::vector<uint8_t> got(kSize);
      RegionBytes(c, c.manifest.regions[0]).read_at(0, got.data(), got.size());
      rc = got == d ? 0 : 2;
    } catch (...) {
      rc = 3;
    }
    ::_exit(rc);
  }
  char b = 0;
  ASSERT_EQ(::read(ready[0], &b, 1), 1);
  const auto t0 = std::chrono::steady_clock::now();
  const PruneResult r = prune_capture(out_, false);
  const auto waited = std::chrono::steady_clock::now() - t0;
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the reader lost bytes: status " << status;
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  EXPECT_TRUE(r.plan.changed());
  EXPECT_GT(r.files_deleted, 0u);
  verify_blobs(open_capture(out_));
}

// Two prunes at once: one prunes, the other waits and finds nothing left; the capture reads
// back whole, every chunk it names there.
TEST_F(PruneTest, TwoPrunesAtOnceRunOneAfterTheOther) {
  const auto d = data();
  const Manifest m = kerncap::testing::write_chunked_capture(out_, d, {}, uint64_t{64} << 10);
  write_footprint(dir(), footprint(m));
  std::vector<pid_t> pids;
  for (int i = 0; i < 2; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 1;
      try {
        rc = prune_capture(out_, false).plan.changed() ? 10 : 11;
      } catch (...) {
        rc = 3;
      }
      ::_exit(rc);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    codes.push_back(WEXITSTATUS(status));
  }
  std::sort(codes.begin(), codes.end());
  EXPECT_EQ(codes, (std::vector<int>{10, 11}));  // one pruned, one found nothing to do
  const Capture c = open_capture(out_);
  verify_blobs(c);
  EXPECT_EQ(chunk_files(), c.manifest.regions[0].chunks.size());
}

// Fault matrix (issue 38): a prune SIGKILLed at any moment leaves a capture that opens, whose
// stored bytes all verify and read back as the application's, old manifest or new; the next
// prune completes.
TEST_F(PruneTest, APruneKilledAtAnyMomentLeavesAWholeCapture) {
  const auto d = data();
  int old_seen = 0, new_seen = 0;
  for (int delay_us : {0, 100, 300, 600, 1000, 2000, 3000, 4000, 4500, 5000, 5500, 6000, 7000, 8000, 10000}) {
    fs::remove_all(out_);
    fs::create_directories(out_);
    const Manifest m = kerncap::testing::write_chunked_capture(out_, d, {}, uint64_t{16} << 10);  // 64 chunks
    write_footprint(dir(), footprint(m));
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        prune_capture(out_, false);
      } catch (...) {
      }
      ::_exit(0);
    }
    ::usleep(delay_us);
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    {
      const Capture c = open_capture(out_);
      const Region& reg = c.manifest.regions[0];
      (reg.pruned.empty() ? old_seen : new_seen)++;
      verify_blobs(c);
      std::vector<uint8_t> got(kSize);
      RegionBytes(c, reg).read_at(0, got.data(), got.size());
      const std::vector<StoredRun> whole{{0, kSize}};
      for (const auto& r : reg.stored ? *reg.stored : whole)
        EXPECT_TRUE(std::equal(got.begin() + r.offset, got.begin() + r.offset + r.size, d.begin() + r.offset))
            << "killed after " << delay_us << " us";
    }
    prune_capture(out_, false);  // completes (or finds nothing left)
    const Capture c = open_capture(out_);
    verify_blobs(c);
    // Chunks the killed prune wrote, or had not yet deleted, are gone too.
    std::set<std::string> named;
    for (const auto& ch : c.manifest.regions[0].chunks) named.insert(chunk_file_name(ch));
    EXPECT_EQ(chunk_files(), named.size()) << "killed after " << delay_us << " us: files no manifest names";
  }
  std::printf("killed prunes left the old manifest %d times, the new one %d times\n", old_seen, new_seen);
}

}  // namespace
}  // namespace kerncap::format
