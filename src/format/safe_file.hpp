#pragma once
// Opening files of an untrusted directory (a capture travels with bug reports; read it like
// a download): names are relative and plain, every component is opened with openat() and
// O_NOFOLLOW so nothing leads outside the directory, only regular files are accepted (a
// FIFO or a device must not block or feed us endless bytes), and sizes come from the open
// descriptor, never from a second look at the path.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kerncap::format {

// Longest name a manifest may give for one of its files, and its deepest nesting
// ("image/<hash>.cubin" is two components).
inline constexpr size_t kMaxCaptureNameBytes = 512;
inline constexpr size_t kMaxCaptureNameComponents = 4;

// Throws Error(Input) naming `field` unless `name` is a relative path of plain components
// ('/'-separated; none empty, "." or ".."; no '\\', NUL or control characters; bounded).
void check_capture_name(const std::string& name, const std::string& field);

class ReadOnlyFile {
 public:
  // A path the user named (symbolic links followed, unless follow_links is false).
  static ReadOnlyFile open(const std::filesystem::path& p, bool follow_links = true);
  // `rel` inside `dir`, confined: `rel` must pass check_capture_name, no component may be a
  // symbolic link. `what` says what the file holds, for messages ("BEFORE memory").
  static ReadOnlyFile open_in(const std::filesystem::path& dir, const std::string& rel, const std::string& what);

  ReadOnlyFile(ReadOnlyFile&& o) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&& o) noexcept;
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;
  ~ReadOnlyFile();

  uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // Exactly `n` bytes at `offset`; Error(Input) past the end or on a short read.
  void read_at(uint64_t offset, void* data, size_t n) const;
  // The whole file; Error(Input) when it is larger than max_bytes.
  std::vector<uint8_t> read_all(uint64_t max_bytes = UINT64_MAX) const;

 private:
  ReadOnlyFile(int fd, uint64_t size, std::string name) : fd_(fd), size_(size), name_(std::move(name)) {}
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string name_;  // for messages
};

}  // namespace kerncap::format
