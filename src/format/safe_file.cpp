#include "format/safe_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::format {
namespace {

const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// Printable in a message: a hostile name may carry escape sequences or newlines.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 200))
    out += (c < 0x20 || c == 0x7f) ? fmt::format("\\x{:02x}", c) : std::string(1, static_cast<char>(c));
  if (s.size() > 200) out += "...";
  return out;
}

// fstat the descriptor, refuse what is not a regular file, and clear the O_NONBLOCK that let
// open() return at once on a FIFO. Returns the size; closes fd on error.
uint64_t regular_size(int fd, const std::string& shown, const std::string& what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    input_error(fmt::format("cannot stat {}: {}", shown, std::strerror(e)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    input_error(fmt::format("{}{} is {}, not a regular file", shown, what, file_type(st.st_mode)));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

void check_capture_name(const std::string& name, const std::string& field) {
  auto bad = [&](const char* why) {
    input_error(fmt::format("capture manifest field '{}' names the file \"{}\", which {}; a capture names its "
                            "files relative to its directory, as plain names (the capture is damaged or crafted)",
                            field, printable(name), why));
  };
  if (name.empty()) bad("is empty");
  if (name.size() > kMaxCaptureNameBytes) bad("is too long");
  if (name.find('\0') != std::string::npos) bad("holds a NUL byte");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f) bad("holds a control character");
  if (name.find('\\') != std::string::npos) bad("holds a backslash");
  if (name.front() == '/') bad("is an absolute path");
  size_t components = 0;
  for (size_t start = 0; start <= name.size();) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    const std::string_view c(name.data() + start, end - start);
    if (c.empty()) bad("has an empty path component");
    if (c == "." || c == "..") bad("has a '.' or '..' component");
    if (c.size() > 255) bad("has a component longer than 255 bytes");
    if (++components > kMaxCaptureNameComponents) bad("is nested too deep");
    start = end + 1;
  }
}

ReadOnlyFile ReadOnlyFile::open(const std::filesystem::path& p, bool follow_links) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_links ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    const int e = errno;
    if (e == ELOOP && !follow_links)
      input_error(fmt::format("{} is a symbolic link; refusing to follow it", p.string()));
    input_error(fmt::format("cannot open {}: {}", p.string(), std::strerror(e)));
  }
  const uint64_t size = regular_size(fd, p.string(), "");
  return ReadOnlyFile(fd, size, p.string());
}

ReadOnlyFile ReadOnlyFile::open_in(const std::filesystem::path& dir, const std::string& rel, const std::string& what) {
  check_capture_name(rel, what);
  const std::string shown = fmt::format("capture file {} ({})", printable(rel), what);
  // The directory itself is what the user named: following a link to it is fine.
  int cur = ::open(dir.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY);
  if (cur < 0) input_error(fmt::format("cannot open the capture directory {}: {}", dir.string(), std::strerror(errno)));
  size_t start = 0;
  for (;;) {
    const size_t slash = rel.find('/', start);
    const bool last = slash == std::string::npos;
    const std::string comp = rel.substr(start, last ? std::string::npos : slash - start);
    const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last ? O_NONBLOCK : O_DIRECTORY);
    const int next = ::openat(cur, comp.c_str(), flags);
    const int e = errno;
    ::close(cur);
    if (next < 0) {
      if (e == ENOENT)
        input_error(fmt::format("capture is missing {} ({}): it is incomplete or damaged", printable(rel), what));
      if (e == ELOOP || (e == ENOTDIR && !last))
        input_error(fmt::format("{}: '{}' is a symbolic link or not a directory; a capture's files must be plain "
                                "files inside it (links are not followed)",
                                shown, printable(comp)));
      input_error(fmt::format("cannot open {}: {}", shown, std::strerror(e)));
    }
    if (last) {
      const uint64_t size = regular_size(next, shown, "");
      return ReadOnlyFile(next, size, shown);
    }
    cur = next;
    start = slash + 1;
  }
}

ReadOnlyFile::ReadOnlyFile(ReadOnlyFile&& o) noexcept : fd_(o.fd_), size_(o.size_), name_(std::move(o.name_)) {
  o.fd_ = -1;
}

ReadOnlyFile& ReadOnlyFile::operator=(ReadOnlyFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    size_ = o.size_;
    name_ = std::move(o.name_);
    o.fd_ = -1;
  }
  return *this;
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ReadOnlyFile::read_at(uint64_t offset, void* data, size_t n) const {
  if (n > size_ || offset > size_ - n)
    input_error(fmt::format("{}: read past the end ({} + {} > {}): the capture is truncated", name_, offset, n, size_));
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) input_error(fmt::format("{}: read failed at offset {}: {}", name_, offset, std::strerror(errno)));
    if (got == 0) input_error(fmt::format("{}: the file shrank while it was read (at offset {})", name_, offset));
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

std::vector<uint8_t> ReadOnlyFile::read_all(uint64_t max_bytes) const {
  if (size_ > max_bytes)
    input_error(fmt::format("{} has {} bytes, more than the {} this reader accepts", name_, size_, max_bytes));
  if (size_ > SIZE_MAX / 2) input_error(fmt::format("{} is too large to read ({} bytes)", name_, size_));
  std::vector<uint8_t> data(static_cast<size_t>(size_));
  read_at(0, data.data(), data.size());
  return data;
}

}  // namespace kerncap::format
