// Issue 38's fault matrix, the footprint's CPU rows: the disk fills while `kerncap footprint`
// writes footprint.bin and footprint.json into a capture, and the writer is SIGKILLed while it
// writes them. footprint.json names its footprint.bin by size and hash, so the two are one
// footprint: expected, a clear error naming the failed write; a reader (validate, prune,
// `kerncap footprint` itself) finds the old footprint or none, never a json beside another
// footprint's bin (which every reader refuses as damaged, validate included); no temporary
// left after a write error; and the next write completes. RLIMIT_FSIZE with SIGXFSZ ignored
// makes writes past it fail with EFBIG as a full file system's fail with ENOSPC (no root, no
// mount: it runs in CI). The measurement itself needs a GPU (tests/gpu/fault_matrix.sh,
// rows footprint_*); what it produces is written by format::write_footprint alone, tested here.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "file_limit_child.hpp"
#include "scratch_capture.hpp"
#include "common/error.hpp"
#include "footprint/footprint.hpp"
#include "format/footprint.hpp"

namespace kerncap::format {
namespace {

class FootprintWriteFaultTest : public kerncap::testing::ScratchDir {
 protected:
  fs::path dir() const { return out_ / kCaptureDirName; }

  // A footprint of write_small_capture's capture: region 0 read over its first `read_bytes`,
  // written over [128, 192); `escapes` escaped accesses listed (they make footprint.json
  // large while footprint.bin stays tiny: the json is then the file a full disk or a kill
  // meets last).
  static Footprint footprint_of(const Manifest& m, uint64_t read_bytes, size_t escapes) {
    Footprint f;
    f.tool_version = "test";
    f.kernel = m.mangled_name;
    f.image_hash = m.image_hash;
    f.device_name = "test";
    const Region& reg = m.regions[0];
    RegionFootprint r;
    r.id = reg.id;
    r.kind = reg.kind;
    r.base = reg.base;
    r.size = reg.size;
    r.read = Bitmap(4, r.size);
    r.written = Bitmap(1, r.size);
    r.rbw = Bitmap(4, r.size);
    r.read.set_range(0, read_bytes / 4);
    r.rbw.set_range(0, read_bytes / 4);
    r.written.set_range(128, 64);
    f.regions.push_back(std::move(r));
    for (size_t i = 0; i < escapes; ++i)
      f.escapes.push_back({0x1000 + 4 * i, 0x7000000000ull + 16 * i, 4, true, false, false,
                           "an address before region 0 (device 0x7f0000000000)"});
    f.escape_count = escapes;
    f.accesses = 1000;
    f.kernel_pc = 0x7000000000ull;
    return f;
  }

  // What a reader finds: "none", "read <bytes>" (the footprint's read bytes of region 0), or
  // "refused: <message>" (a damaged footprint).
  std::string found(const Manifest& m) const {
    if (!footprint_exists(dir())) return "none";
    try {
      const Footprint f = read_footprint(dir(), &m);
      return "read " + std::to_string(f.regions.at(0).read_bytes());
    } catch (const Error& e) {
      return std::string("refused: ") + e.what();
    }
  }

  std::vector<std::string> temporaries() const {
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir()))
      if (e.path().filename().string().starts_with("footprint.") && e.path().extension() == ".tmp")
        left.push_back(e.path().filename().string());
    return left;
  }

  static std::string text_of(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  static uint64_t file_size_of(const fs::path& p) { return static_cast<uint64_t>(fs::file_size(p)); }
};

// Runs `work` in a child whose files may not grow past `limit` bytes (file_limit_child.hpp).
std::string footprint_in_full_disk(uint64_t limit, const std::function<void()>& work) {
  return kerncap::testing::in_child_with_file_limit(limit, work);
}

TEST_F(FootprintWriteFaultTest, AFullDiskWhileTheJsonIsWrittenKeepsTheOldFootprint) {
  const Manifest m = kerncap::testing::write_small_capture(out_);
  write_footprint(dir(), footprint_of(m, 64, 0));
  ASSERT_EQ(found(m), "read 64");
  const std::string old_json = text_of(dir() / kFootprintJson);

  // The new footprint's sizes, measured in a scratch copy: the limit lies between the bin's
  // (which fits) and the json's (which does not), the case where the old writer had already
  // replaced footprint.bin when footprint.json failed.
  const fs::path probe = out_ / "probe";
  fs::create_directories(probe);
  const Footprint next = footprint_of(m, 256, 200);
  write_footprint(probe, next);
  const uint64_t bin = file_size_of(probe / kFootprintBin), json = file_size_of(probe / kFootprintJson);
  ASSERT_LT(bin + 1024, json);
  const std::string what = footprint_in_full_disk(bin + 512, [&] { write_footprint(dir(), next); });

  EXPECT_NE(what.find("File too large"), std::string::npos) << "the error does not say what happened: " << what;
  EXPECT_NE(what.find("footprint.json"), std::string::npos) << "the error does not name the file: " << what;
  EXPECT_NE(what.find("keeps its earlier footprint"), std::string::npos) << what;
  EXPECT_EQ(found(m), "read 64") << "the old footprint is gone or torn";
  EXPECT_EQ(text_of(dir() / kFootprintJson), old_json);
  EXPECT_EQ(temporaries(), std::vector<std::string>{});
  // What validate and `kerncap footprint` read: the capture and its (old) footprint.
  const Capture c = open_capture(out_);
  EXPECT_NO_THROW(footprint::load_or_none(c));
  // With room again, the new footprint is written.
  write_footprint(dir(), next);
  EXPECT_EQ(found(m), "read 256");
}

TEST_F(FootprintWriteFaultTest, AFullDiskWhileTheBinIsWrittenKeepsTheOldFootprint) {
  const Manifest m = kerncap::testing::write_small_capture(out_);
  write_footprint(dir(), footprint_of(m, 64, 0));
  const std::string what = footprint_in_full_disk(8, [&] { write_footprint(dir(), footprint_of(m, 256, 0)); });
  EXPECT_NE(what.find("File too large"), std::string::npos) << what;
  EXPECT_NE(what.find("footprint.bin"), std::string::npos) << what;
  EXPECT_EQ(found(m), "read 64");
  EXPECT_EQ(temporaries(), std::vector<std::string>{});
}

TEST_F(FootprintWriteFaultTest, AFullDiskOnTheFirstFootprintLeavesNone) {
  const Manifest m = kerncap::testing::write_small_capture(out_);
  const std::string what = footprint_in_full_disk(8, [&] { write_footprint(dir(), footprint_of(m, 256, 50)); });
  EXPECT_NE(what.find("File too large"), std::string::npos) << what;
  EXPECT_NE(what.find("no footprint"), std::string::npos) << what;
  EXPECT_EQ(found(m), "none");
  EXPECT_FALSE(fs::exists(dir() / kFootprintBin));
  EXPECT_EQ(temporaries(), std::vector<std::string>{});
}

// A writer SIGKILLed at many moments while it rewrites the footprint (two footprints in
// turn): at a time, and the moment the parent sees each of the writer's steps on disk (its
// temporary bin, its temporary json, no footprint.json), where a kill lands inside the write.
// Every time, a reader finds one of the two footprints whole or none, and the next write
// completes and reads back.
TEST_F(FootprintWriteFaultTest, AWriterKilledAtAnyMomentLeavesTheOldFootprintOrNone) {
  const Manifest m = kerncap::testing::write_small_capture(out_);
  const Footprint a = footprint_of(m, 64, 300), b = footprint_of(m, 256, 400);
  const fs::path bin_tmp = dir() / "footprint.bin.tmp", json_tmp = dir() / "footprint.json.tmp";
  const fs::path json = dir() / kFootprintJson;
  // When to kill: 0 after a delay, 1 once the temporary bin is there, 2 the temporary json,
  // 3 once footprint.json is gone (between the writer's unlink and its renames).
  const std::function<bool()> seen[] = {[] { return true; }, [&] { return fs::exists(bin_tmp); },
                                        [&] { return fs::exists(json_tmp); }, [&] { return !fs::exists(json); }};
  int old_or_new = 0, none = 0, caught[4] = {0, 0, 0, 0};
  std::vector<std::string> torn;
  for (int round = 0; round < 48; ++round) {
    const int when = round % 4;
    write_footprint(dir(), a);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        for (int i = 0;; ++i) write_footprint(dir(), i % 2 ? a : b);
      } catch (...) {
      }
      ::_exit(1);
    }
    if (when == 0) ::usleep(static_cast<useconds_t>(500 + round * 997 % 6000));
    bool hit = false;
    for (int spin = 0; spin < 5'000'000 && !(hit = seen[when]()); ++spin) {
    }
    ::kill(pid, SIGKILL);
    caught[when] += hit;
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped before it was killed: " << status;
    const std::string f = found(m);
    if (f == "none") ++none;
    else if (f == "read 64" || f == "read 256") ++old_or_new;
    else torn.push_back(f);
    // The next `kerncap footprint` (here its write) completes, whatever the kill left.
    write_footprint(dir(), b);
    EXPECT_EQ(found(m), "read 256");
    EXPECT_EQ(temporaries(), std::vector<std::string>{});
  }
  EXPECT_EQ(torn, std::vector<std::string>{}) << "a killed writer left a footprint every reader refuses";
  EXPECT_GT(caught[2] + caught[3], 0) << "no kill landed inside a write: the test proved nothing";
  std::printf("killed writers left a whole footprint %d times, none %d times; kills at a seen step: temporary bin "
              "%d, temporary json %d, footprint.json gone %d (of 12 each)\n",
              old_or_new, none, caught[1], caught[2], caught[3]);
}

}  // namespace
}  // namespace kerncap::format

namespace kerncap::format {
namespace {

TEST_F(FootprintWriteFaultTest, TwoWritersAtOnceLeaveOneWholeFootprint) {
  // Two `kerncap footprint` processes on one capture (or a validate measuring one itself beside
  // them), each writing a different footprint many times: a reader between and after finds one
  // of the two whole, never a json beside the other writer's bin, and no writer fails.
  const Manifest m = kerncap::testing::write_small_capture(out_);
  const Footprint a = footprint_of(m, 64, 3), b = footprint_of(m, 256, 40);
  auto writer = [&](const Footprint& f) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int failed = 0;
      for (int i = 0; i < 300; ++i) {
        try {
          write_footprint(dir(), f);
        } catch (const Error&) {
          ++failed;
        }
      }
      ::_exit(failed ? 1 : 0);
    }
    return pid;
  };
  const pid_t pa = writer(a), pb = writer(b);
  std::set<std::string> seen;
  for (int alive = 2; alive > 0;) {
    seen.insert(found(m));
    alive = 0;
    for (pid_t p : {pa, pb}) alive += ::waitpid(p, nullptr, WNOHANG) == 0 ? 1 : 0;
  }
  int sa = 0, sb = 0;
  ::waitpid(pa, &sa, 0);
  ::waitpid(pb, &sb, 0);
  EXPECT_TRUE(WIFEXITED(sa) && WEXITSTATUS(sa) == 0) << "a writer failed";
  EXPECT_TRUE(WIFEXITED(sb) && WEXITSTATUS(sb) == 0) << "a writer failed";
  const std::string last = found(m);
  EXPECT_TRUE(last == "read 64" || last == "read 256") << last;
  for (const auto& s : seen) EXPECT_EQ(s.rfind("refused", 0), std::string::npos) << s;
  EXPECT_EQ(temporaries(), std::vector<std::string>{});
}

}  // namespace
}  // namespace kerncap::format
