// Writing from capture data: private modes whatever the umask, no writing through a planted
// symlink, and removal that never leaves the directory it was given.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "common/error.hpp"
#include "common/private_files.hpp"

namespace kerncap::files {
namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

mode_t mode_of(const fs::path& p) {
  struct stat st{};
  EXPECT_EQ(lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

class PrivateFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kerncap-private-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "outside");
    victim_ = root_ / "outside" / "victim";
    std::ofstream(victim_) << "precious";
    old_umask_ = ::umask(0);  // the worst case: nothing masked
  }
  void TearDown() override {
    ::umask(old_umask_);
    fs::remove_all(root_);
  }
  fs::path root_, victim_;
  mode_t old_umask_ = 022;
};

TEST_F(PrivateFiles, NewFilesArePrivateUnderUmaskZero) {
  write_new_file(root_ / "a", "x");
  EXPECT_EQ(mode_of(root_ / "a"), 0600u);
  replace_file(root_ / "b", "y", kPrivateExecutable);
  EXPECT_EQ(mode_of(root_ / "b"), 0700u);
  create_private_dirs(root_ / "d1" / "d2");
  EXPECT_EQ(mode_of(root_ / "d1"), 0700u);
  EXPECT_EQ(mode_of(root_ / "d1" / "d2"), 0700u);
  create_private_dirs(root_ / "d1");  // existing: fine
}

TEST_F(PrivateFiles, NeverWritesThroughASymlink) {
  fs::create_symlink(victim_, root_ / "link");
  EXPECT_THROW(write_new_file(root_ / "link", "pwned"), Error);
  EXPECT_EQ(slurp(victim_), "precious");
  // A pre-planted NAME.tmp is unlinked, not followed; a symlink at NAME is replaced.
  fs::create_symlink(victim_, root_ / "Makefile.tmp");
  fs::create_symlink(victim_, root_ / "Makefile");
  replace_file(root_ / "Makefile", "all:\n");
  EXPECT_EQ(slurp(victim_), "precious");
  EXPECT_FALSE(fs::is_symlink(root_ / "Makefile"));
  EXPECT_EQ(slurp(root_ / "Makefile"), "all:\n");
  EXPECT_FALSE(fs::exists(fs::symlink_status(root_ / "Makefile.tmp")));
}

TEST_F(PrivateFiles, SymlinkIsNotADirectory) {
  fs::create_directory_symlink(root_ / "outside", root_ / "out");
  try {
    create_private_dirs(root_ / "out");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
}

TEST_F(PrivateFiles, RemoveInsideNeverFollowsLinks) {
  const fs::path out = root_ / "out";
  fs::create_directories(out / "capture" / "mem");
  std::ofstream(out / "capture" / "mem" / "0.bin") << "blob";
  fs::create_directory_symlink(root_ / "outside", out / "capture" / "escape");
  fs::create_symlink(victim_, out / "capture" / "mem" / "file_link");
  fs::create_directory_symlink(root_ / "outside", out / ".kerncap");
  remove_inside(out, "capture");
  remove_inside(out, ".kerncap");
  remove_inside(out, "absent");
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / "capture")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / ".kerncap")));
  EXPECT_EQ(slurp(victim_), "precious");
  EXPECT_TRUE(fs::is_directory(root_ / "outside"));
  // The directory itself must not be a symlink.
  fs::create_directory_symlink(root_ / "outside", root_ / "linked_out");
  EXPECT_THROW(remove_inside(root_ / "linked_out", "victim"), Error);
  EXPECT_EQ(slurp(victim_), "precious");
}

}  // namespace
}  // namespace kerncap::files
