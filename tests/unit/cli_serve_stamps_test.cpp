// What makes `kerncap serve` stop answering: a watched file replaced, edited, created or removed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "serve/file_stamps.hpp"

namespace kerncap::serve {
namespace {
namespace fs = std::filesystem;

TEST(ServeFileStamps, AnyChangeOfAWatchedFileIsSeen) {
  const fs::path d = fs::temp_directory_path() / ("kerncap_serve_stamps_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  const fs::path manifest = d / "manifest.json", footprint = d / "footprint.json", spec = d / "compare.json";
  std::ofstream(manifest) << "{}";
  std::ofstream(footprint) << "{}";

  const FileStamps s({manifest, footprint, spec});
  EXPECT_EQ(s.changed(), nullptr);
  {
    const FileStamps t({manifest, footprint, spec});
    std::ofstream(manifest, std::ios::app) << " ";  // edited in place: the size changes
    ASSERT_NE(t.changed(), nullptr);
    EXPECT_EQ(*t.changed(), manifest);
  }
  {
    const FileStamps t({manifest, footprint, spec});
    std::ofstream(d / "new.json") << "{}";  // replaced by a rename: another inode
    fs::rename(d / "new.json", footprint);
    ASSERT_NE(t.changed(), nullptr);
    EXPECT_EQ(*t.changed(), footprint);
  }
  {
    const FileStamps t({manifest, footprint, spec});
    std::ofstream(spec) << "{}";  // created
    ASSERT_NE(t.changed(), nullptr);
    EXPECT_EQ(*t.changed(), spec);
  }
  {
    const FileStamps t({manifest, footprint, spec});
    fs::remove(footprint);  // removed
    ASSERT_NE(t.changed(), nullptr);
    EXPECT_EQ(*t.changed(), footprint);
  }
  fs::remove_all(d);
}

}  // namespace
}  // namespace kerncap::serve
