// Disk and safety around writing a capture: the free-space check decides on made-up
// figures, a failed capture leaves one line and no partial directory.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include "common/error.hpp"
#include "storage/capture_writer.hpp"
#include "storage/disk_space.hpp"
#include "format/out_layout.hpp"
#include "scratch_capture.hpp"

namespace kerncap::format {
namespace {

constexpr uint64_t GiB = uint64_t{1} << 30;

class FakeFreeSpace : public kerncap::testing::ScratchDir {
 protected:
  void TearDown() override {
    set_free_bytes_for_test({});
    ScratchDir::TearDown();
  }
};

TEST(DiskSpace, FitsWithTheMarginOrSaysWhatIsShort) {
  EXPECT_FALSE(space_shortage("/out", 8 * GiB, 20 * GiB));
  EXPECT_FALSE(space_shortage("/out", 0, 64ull << 20));
  // 8 GiB needs 64 MiB + 2 % more: 8.2 GiB does not do.
  EXPECT_GT(space_margin(8 * GiB), 200ull << 20);
  const auto refusal = space_shortage("/out", 8 * GiB, 8 * GiB + (100ull << 20));
  ASSERT_TRUE(refusal);
  EXPECT_NE(refusal->find("8.0 GiB"), std::string::npos) << *refusal;
  EXPECT_NE(refusal->find("/out has 8.1 GiB free"), std::string::npos) << *refusal;
  EXPECT_NE(refusal->find("--store"), std::string::npos) << *refusal;
}

TEST_F(FakeFreeSpace, TheCheckRefusesWithADeviceErrorBeforeWriting) {
  set_free_bytes_for_test([](const fs::path&) { return std::optional<uint64_t>(GiB); });
  try {
    check_disk_space(out_, 59 * GiB);
    FAIL() << "no refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Device);
    EXPECT_NE(std::string(e.what()).find("59.0 GiB"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_disk_space(out_, 512ull << 20));
  // A file system that cannot say: the writes will.
  set_free_bytes_for_test([](const fs::path&) { return std::optional<uint64_t>(); });
  EXPECT_NO_THROW(check_disk_space(out_, 1000 * GiB));
  set_free_bytes_for_test({});
  EXPECT_TRUE(free_bytes(out_).has_value());  // the real figure of the scratch directory
}

TEST_F(FakeFreeSpace, AFailedCaptureLeavesOneLineAndNoPartialDirectory) {
  const mode_t old = ::umask(0);
  {
    CaptureWriter w(out_, 42);
    const std::vector<uint8_t> blob(4096, 7);
    write_file(w.dir() / "mem" / "0.bin", blob.data(), blob.size());
    w.abandon("the capture needs up to 59.0 GiB\nof disk");
    EXPECT_FALSE(fs::exists(out_ / "capture.partial-42"));
  }
  ::umask(old);
  const fs::path note = out_ / out::kCaptureFailed;
  ASSERT_TRUE(fs::exists(note));
  struct stat st {};
  ASSERT_EQ(::stat(note.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(note);
  std::string line, more;
  std::getline(in, line);
  EXPECT_FALSE(std::getline(in, more));  // one line
  EXPECT_NE(line.find("59.0 GiB of disk"), std::string::npos) << line;
  EXPECT_NE(line.find("capture.partial-42 removed"), std::string::npos) << line;
  EXPECT_NE(line.find("4.0 KiB"), std::string::npos) << line;
  // Readers say what happened instead of "not a capture".
  try {
    open_capture(out_);
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("the last capture into it failed"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(out::force_replaced(out::kCaptureFailed));
  // A capture that completes later removes the note.
  CaptureWriter w(out_, 43);
  Manifest m;
  m.tool_version = "test";
  w.publish(m);
  EXPECT_FALSE(fs::exists(note));
}

TEST_F(FakeFreeSpace, PartialDirectoriesOfACrashedCaptureGoAfterTheApplication) {
  fs::create_directories(out_ / "capture.partial-7" / "mem");
  const std::vector<uint8_t> blob(2048, 1);
  write_file(out_ / "capture.partial-7" / "mem" / "0.bin", blob.data(), blob.size());
  // A link inside the partial directory is removed, never what it points to.
  fs::create_directories(out_ / "elsewhere");
  write_file(out_ / "elsewhere" / "keep.bin", blob.data(), blob.size());
  fs::create_directory_symlink(out_ / "elsewhere", out_ / "capture.partial-7" / "link");
  fs::create_directories(out_ / "kept");
  EXPECT_EQ(abandon_partials(out_, "the application was killed by signal 9 during the capture"), 1u);
  EXPECT_FALSE(fs::exists(out_ / "capture.partial-7"));
  EXPECT_TRUE(fs::exists(out_ / "elsewhere" / "keep.bin"));
  EXPECT_TRUE(fs::exists(out_ / "kept"));
  std::ifstream in(out_ / out::kCaptureFailed);
  std::string line;
  std::getline(in, line);
  EXPECT_NE(line.find("killed by signal 9"), std::string::npos) << line;
  EXPECT_NE(line.find("capture.partial-7 removed: 2.0 KiB"), std::string::npos) << line;
  // Nothing partial: nothing written.
  fs::remove(out_ / out::kCaptureFailed);
  EXPECT_EQ(abandon_partials(out_, "no kernel matched"), 0u);
  EXPECT_FALSE(fs::exists(out_ / out::kCaptureFailed));
}

}  // namespace
}  // namespace kerncap::format
