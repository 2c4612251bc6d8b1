#include "serve/file_stamps.hpp"

#include <sys/stat.h>

namespace kerncap::serve {

FileStamps::FileStamps(std::vector<std::filesystem::path> files) : files_(std::move(files)) {
  for (const auto& f : files_) stamps_.push_back(stamp(f));
}

FileStamps::Stamp FileStamps::stamp(const std::filesystem::path& p) {
  struct stat st{};
  if (::stat(p.c_str(), &st) != 0) return {};  // absent (or unreadable): compared as absent
  return {true, st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec};
}

const std::filesystem::path* FileStamps::changed() const {
  for (size_t i = 0; i < files_.size(); ++i)
    if (!(stamp(files_[i]) == stamps_[i])) return &files_[i];
  return nullptr;
}

}  // namespace kerncap::serve
