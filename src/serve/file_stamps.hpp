#pragma once
// Whether files changed since a moment: `kerncap serve` keeps a session opened from the
// capture's manifest, its footprint and OUT/compare.json; when one of them is replaced,
// edited, created or removed, the session no longer answers what a fresh process would.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <vector>

namespace kerncap::serve {

class FileStamps {
 public:
  explicit FileStamps(std::vector<std::filesystem::path> files);
  // The first file whose device, inode, size or modification time differs from the
  // constructor's look at it (existence included); none when all are as they were.
  const std::filesystem::path* changed() const;

 private:
  struct Stamp {
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  static Stamp stamp(const std::filesystem::path& p);
  std::vector<std::filesystem::path> files_;
  std::vector<Stamp> stamps_;
};

}  // namespace kerncap::serve
