// Issue 38's fault matrix, prune's CPU rows with a shared chunk store: two captures keep their
// BEFORE bytes in one store (some chunks shared), and `kerncap prune` of one of them meets a
// disk that fills while it writes its kept runs as new chunks, or a SIGKILL at any moment.
// Prune writes new chunks into the store, then the manifest in one rename, and never deletes
// from a shared store (other captures use it). Expected: a clear Error(Device) naming the
// failed write; the pruned capture opens with every chunk it names there and whole, its bytes
// as before (or, once its new manifest is in, every kept byte exact); the other capture
// untouched (it verifies and reads back); under a chunk's name in the store only that chunk
// (temporaries of a killed writer are named so that no reader takes them for one); and the
// next prune completes. RLIMIT_FSIZE with SIGXFSZ ignored makes writes past it fail with EFBIG
// as a full file system's fail with ENOSPC (no root, no mount: it runs in CI).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <set>
#include <string>

#include "file_limit_child.hpp"
#include "prune_footprint.hpp"
#include "scratch_capture.hpp"
#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "format/footprint.hpp"
#include "format/region_bytes.hpp"
#include "storage/prune.hpp"

namespace kerncap::format {
namespace {

constexpr uint64_t kStoreRegion = uint64_t{1} << 20;

class PruneStoreFaultTest : public kerncap::testing::ScratchDir {
 protected:
  fs::path store() const { return out_ / "store"; }
  fs::path a() const { return out_ / "a"; }  // pruned
  fs::path b() const { return out_ / "b"; }  // shares the store, never pruned

  // Region bytes: `seed` 1 and 2 differ only in their second half, so the two captures share
  // the chunks of the first half.
  static std::vector<uint8_t> bytes_of(unsigned seed) {
    std::vector<uint8_t> d(kStoreRegion);
    for (size_t i = 0; i < d.size(); ++i) {
      const unsigned s = i < d.size() / 2 ? 1 : seed;
      d[i] = static_cast<uint8_t>((i * 2654435761u + s * 40503u) >> 13 | 1);
    }
    return d;
  }

  static Footprint footprint_of(const Manifest& m) { return kerncap::testing::prune_test_footprint(m, kStoreRegion); }

  void make_captures() {
    const Manifest ma = kerncap::testing::write_chunked_capture(a(), bytes_of(1), {}, uint64_t{16} << 10, store());
    kerncap::testing::write_chunked_capture(b(), bytes_of(2), {}, uint64_t{16} << 10, store());
    write_footprint(a() / kCaptureDirName, footprint_of(ma));
  }

  // Every file of the store is a chunk under its own name, or (`temporaries_ok`) a writer's
  // temporary, which starts with a dot.
  std::vector<std::string> odd_store_files(bool temporaries_ok) const {
    std::vector<std::string> odd;
    for (const auto& e : fs::directory_iterator(store())) {
      const std::string name = e.path().filename().string();
      ChunkRef ref;
      const bool chunk = name.size() == 36 && (name.ends_with(".zst") || name.ends_with(".raw")) &&
                         parse_chunk_hash(name.substr(0, 32), ref);
      if (!chunk && !(temporaries_ok && name.front() == '.')) odd.push_back(name);
    }
    return odd;
  }

  // The capture opens with its store, every chunk it names verifies, and its stored bytes are
  // `want`'s. Returns whether its manifest records pruned ranges.
  bool check_whole(const fs::path& out, const std::vector<uint8_t>& want, const std::string& when) const {
    const Capture c = open_capture(out, store());
    verify_blobs(c);
    const Region& reg = c.manifest.regions[0];
    std::vector<uint8_t> got(kStoreRegion);
    RegionBytes(c, reg).read_at(0, got.data(), got.size());
    const std::vector<StoredRun> whole{{0, kStoreRegion}};
    for (const auto& r : reg.stored ? *reg.stored : whole)
      EXPECT_TRUE(std::equal(got.begin() + r.offset, got.begin() + r.offset + r.size, want.begin() + r.offset))
          << out.filename() << " " << when << ": stored bytes differ at run " << r.offset;
    return !reg.pruned.empty();
  }

  // The names of the chunks `out` names, for checking that none of them left the store.
  std::set<std::string> named_chunks(const fs::path& out) const {
    std::set<std::string> names;
    const Capture c = open_capture(out, store());
    for (const auto& ch : c.manifest.regions[0].chunks) names.insert(chunk_file_name(ch));
    return names;
  }
};

// Runs `work` in a child (file_limit_child.hpp), the store named as --store names it; `limit` 0:
// no file-size limit.
std::string prune_in_child(const fs::path& store, uint64_t limit, const std::function<void()>& work) {
  return kerncap::testing::in_child_with_file_limit(limit, [&] {
    set_default_store(store);
    work();
  });
}

TEST_F(PruneStoreFaultTest, AFullDiskDuringPruneLosesNothingFromTheSharedStore) {
  make_captures();
  const std::set<std::string> a_chunks = named_chunks(a()), b_chunks = named_chunks(b());
  const std::string what =
      prune_in_child(store(), 256, [&] { prune_capture(a(), false); });  // no new chunk fits in 256 bytes
  EXPECT_EQ(what.rfind("device: ", 0), 0u) << "the full disk was not an Error(Device): " << what;
  EXPECT_NE(what.find("too large"), std::string::npos) << "the error does not say what happened: " << what;
  EXPECT_NE(what.find("is as it was"), std::string::npos) << "the error does not say the capture is unchanged: " << what;
  std::printf("prune on a full disk: %s\n", what.c_str());

  EXPECT_FALSE(check_whole(a(), bytes_of(1), "after the failed prune")) << "a manifest was published";
  EXPECT_FALSE(check_whole(b(), bytes_of(2), "after the failed prune"));
  EXPECT_EQ(named_chunks(a()), a_chunks);
  EXPECT_EQ(odd_store_files(false), std::vector<std::string>{}) << "a failed write left a file in the store";

  // With room again, the prune completes; the store keeps every chunk (both captures' old ones).
  EXPECT_EQ(prune_in_child(store(), 0, [&] {
              if (!prune_capture(a(), false).plan.changed()) throw std::runtime_error("nothing pruned");
            }),
            "");
  EXPECT_TRUE(check_whole(a(), bytes_of(1), "after the prune"));
  EXPECT_FALSE(check_whole(b(), bytes_of(2), "after the prune"));
  for (const auto& n : a_chunks) EXPECT_TRUE(fs::exists(store() / n)) << n << " left the shared store";
  for (const auto& n : b_chunks) EXPECT_TRUE(fs::exists(store() / n)) << n << " left the shared store";
}

// A prune SIGKILLed at any moment (at a time, and once its first new chunk is in the store):
// the pruned capture opens whole, old manifest or new; the other capture is untouched; only
// whole chunks under chunks' names; the next prune completes.
TEST_F(PruneStoreFaultTest, APruneKilledAtAnyMomentLosesNothingFromTheSharedStore) {
  int old_seen = 0, new_seen = 0, temporaries_left = 0;
  for (int delay_us : {-1, 0, 200, 600, 1000, 2000, 3000, 4000, 6000, 8000, 12000, 20000}) {
    fs::remove_all(out_);
    fs::create_directories(out_);
    make_captures();
    const std::set<std::string> b_chunks = named_chunks(b());
    const size_t files_before = static_cast<size_t>(std::distance(fs::directory_iterator(store()), fs::directory_iterator()));
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      set_default_store(store());
      try {
        prune_capture(a(), false);
      } catch (...) {
      }
      ::_exit(0);
    }
    if (delay_us >= 0) {
      ::usleep(static_cast<useconds_t>(delay_us));
    } else {  // the moment a new chunk appears
      for (int i = 0; i < 2'000'000; ++i)
        if (static_cast<size_t>(std::distance(fs::directory_iterator(store()), fs::directory_iterator())) > files_before)
          break;
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    const std::string when = "killed after " + std::to_string(delay_us) + " us";
    (check_whole(a(), bytes_of(1), when) ? new_seen : old_seen)++;
    EXPECT_FALSE(check_whole(b(), bytes_of(2), when));
    for (const auto& n : b_chunks) EXPECT_TRUE(fs::exists(store() / n)) << when << ": " << n << " left the store";
    EXPECT_EQ(odd_store_files(true), std::vector<std::string>{}) << when;
    temporaries_left += static_cast<int>(odd_store_files(false).size());
    // The next prune completes (or finds nothing left) and the capture reads back.
    EXPECT_EQ(prune_in_child(store(), 0, [&] { prune_capture(a(), false); }), "") << when;
    EXPECT_TRUE(check_whole(a(), bytes_of(1), when + ", then pruned again"));
    EXPECT_FALSE(check_whole(b(), bytes_of(2), when + ", then pruned again"));
  }
  // A shared store is never cleaned by prune: a killed writer's temporaries stay (no reader
  // takes them for a chunk; they cost space until removed by hand).
  std::printf("killed prunes with a shared store left the old manifest %d times, the new one %d times; %d chunk "
              "temporaries left in the store\n",
              old_seen, new_seen, temporaries_left);
}

}  // namespace
}  // namespace kerncap::format
