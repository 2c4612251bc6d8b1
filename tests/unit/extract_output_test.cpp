// Where `kerncap extract -o OUT` writes and what `--force` deletes, when OUT or entries in it
// are symlinks (a capture directory handed around may carry any).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "common/error.hpp"
#include "extract/capture_run.hpp"

using namespace kerncap;
using namespace kerncap::extract;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class ExtractOutputLinks : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kerncap-out-links-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    // Someone else's directory, shaped like an OUT.
    fs::create_directories(root_ / "theirs" / "capture");
    fs::create_directories(root_ / "theirs" / ".kerncap");
    std::ofstream(root_ / "theirs" / "capture" / "manifest.json") << "{}";
    std::ofstream(root_ / "theirs" / ".kerncap" / "claim") << "1";
  }
  void TearDown() override { fs::remove_all(root_); }
  bool theirs_intact() {
    return slurp(root_ / "theirs" / "capture" / "manifest.json") == "{}" &&
           slurp(root_ / "theirs" / ".kerncap" / "claim") == "1";
  }
  fs::path root_;
};

TEST_F(ExtractOutputLinks, OutputThatIsASymlinkIsRefused) {
  fs::create_directory_symlink(root_ / "theirs", root_ / "out");
  // With trailing slashes too ("out/" would otherwise resolve the link).
  for (const fs::path& out : {root_ / "out", fs::path(root_.string() + "/out/"), fs::path(root_.string() + "/out//")}) {
    for (bool force : {false, true}) {
      try {
        prepare_output(out, force);
        ADD_FAILURE() << "a symlinked OUT was accepted: " << out;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage);
        EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("theirs"), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_TRUE(theirs_intact());
}

TEST_F(ExtractOutputLinks, ForceRemovesLinksNotTheirTargets) {
  const fs::path out = root_ / "out";
  fs::create_directories(out);
  fs::create_directory_symlink(root_ / "theirs" / "capture", out / "capture");
  fs::create_directory_symlink(root_ / "theirs", out / "triton");
  fs::create_directories(out / ".kerncap");
  fs::create_directory_symlink(root_ / "theirs" / ".kerncap", out / ".kerncap" / "images");
  prepare_output(out, true);
  EXPECT_TRUE(theirs_intact());
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / "capture")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / "triton")));
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(out / ".kerncap")));
}

TEST_F(ExtractOutputLinks, NewOutputIsPrivate) {
  const mode_t old = ::umask(0);
  prepare_output(root_ / "fresh" / "out", false);
  ::umask(old);
  struct stat st{};
  ASSERT_EQ(stat((root_ / "fresh" / "out" / ".kerncap").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((root_ / "fresh" / "out").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

}  // namespace
