#include "common/private_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::files {

namespace {

[[noreturn]] void cannot(std::string_view what, const fs::path& p, int err) {
  std::string hint;
  if (err == EEXIST || err == ELOOP)
    hint = " (something is already there: kerncap never writes through an existing file or symlink it did not create "
           "just now; remove it and retry)";
  input_error(fmt::format("cannot {} {}: {}{}", what, p.string(), std::strerror(err), hint));
}

// Removes every entry of the open directory `fd` (which it closes), then nothing else.
void empty_dir(int fd, const fs::path& shown) {
  DIR* d = fdopendir(fd);
  if (!d) {
    const int err = errno;
    ::close(fd);
    cannot("list", shown, err);
  }
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st{};
    if (fstatat(dirfd(d), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      const int sub = openat(dirfd(d), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        const int err = errno;
        closedir(d);
        cannot("open", shown / n, err);
      }
      empty_dir(sub, shown / n);
      if (unlinkat(dirfd(d), n.c_str(), AT_REMOVEDIR) != 0) {
        const int err = errno;
        closedir(d);
        cannot("remove", shown / n, err);
      }
    } else if (unlinkat(dirfd(d), n.c_str(), 0) != 0 && errno != ENOENT) {
      const int err = errno;
      closedir(d);
      cannot("remove", shown / n, err);
    }
  }
  closedir(d);
}

}  // namespace

fs::path itself(const fs::path& p) {
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

NewFile::NewFile(const fs::path& p, mode_t mode) : path_(p) {
  fd_ = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd_ < 0) cannot("create", p, errno);
  if (fchmod(fd_, mode) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    cannot("set the mode of", p, err);
  }
}

NewFile::~NewFile() {
  if (fd_ >= 0) ::close(fd_);
}

void NewFile::write(const void* data, size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) cannot("write", path_, n < 0 ? errno : ENOSPC);
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void NewFile::close() {
  if (fd_ < 0) return;
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) cannot("write", path_, errno);
}

void write_new_file(const fs::path& p, std::string_view data, mode_t mode) {
  NewFile f(p, mode);
  f.write(data.data(), data.size());
  f.close();
}

void replace_file(const fs::path& p, std::string_view data, mode_t mode) {
  fs::path tmp = p;
  tmp += ".tmp";
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) cannot("remove the stale", tmp, errno);
  try {
    write_new_file(tmp, data, mode);
  } catch (...) {
    ::unlink(tmp.c_str());  // a full disk: the half-written temporary goes, the old file stays
    throw;
  }
  if (::rename(tmp.c_str(), p.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    cannot("replace", p, err);
  }
}

bool is_symlink(const fs::path& p) {
  struct stat st{};
  return lstat(itself(p).c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

void create_private_dirs(const fs::path& dir_in) {
  if (dir_in.empty()) return;
  const fs::path dir = itself(dir_in);
  struct stat st{};
  if (lstat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return;
    if (S_ISLNK(st.st_mode))
      input_error(fmt::format("{} is a symbolic link; kerncap writes only into real directories (pass the "
                              "directory it points to instead)",
                              dir.string()));
    input_error(fmt::format("{} exists and is not a directory", dir.string()));
  }
  const fs::path parent = dir.parent_path();
  if (!parent.empty() && parent != dir) {
    std::error_code ec;
    if (!fs::is_directory(parent, ec)) create_private_dirs(parent);
  }
  if (::mkdir(dir.c_str(), kPrivateDir) != 0) {
    if (errno == EEXIST && lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return;  // a racing creator
    cannot("create the directory", dir, errno);
  }
  if (::chmod(dir.c_str(), kPrivateDir) != 0) cannot("set the mode of", dir, errno);
}

void remove_inside(const fs::path& dir, std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos)
    fail(ErrorKind::Internal, fmt::format("remove_inside: \"{}\" is not a plain name", name));
  const int d = ::open(itself(dir).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d < 0) cannot("open the directory", dir, errno);
  const std::string n(name);
  struct stat st{};
  if (fstatat(d, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    ::close(d);
    return;
  }
  int rc = 0;
  if (S_ISDIR(st.st_mode)) {
    const int sub = openat(d, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
      const int err = errno;
      ::close(d);
      cannot("open", dir / n, err);
    }
    try {
      empty_dir(sub, dir / n);
    } catch (...) {
      ::close(d);
      throw;
    }
    rc = unlinkat(d, n.c_str(), AT_REMOVEDIR);
  } else {
    rc = unlinkat(d, n.c_str(), 0);
  }
  const int err = errno;
  ::close(d);
  if (rc != 0 && err != ENOENT) cannot("remove", dir / n, err);
}

}  // namespace kerncap::files
