#pragma once
// The one way kerncap creates files and directories from capture data: privately and never
// through a symlink someone planted.
//
// Private (0600 files, 0700 directories and scripts), whatever the umask: a capture holds the
// application's device memory (weights, user data) and the reproducer holds a Makefile that
// `make` runs, so another local user must neither read the one nor edit the other. The
// modes are set with fchmod/chmod after creation, so umask 000 cannot widen them and a
// stricter umask cannot leave a file its owner cannot read.
//
// Exclusive: new files are opened O_CREAT|O_EXCL|O_NOFOLLOW, so a symlink or file already at
// the name (a pre-planted Makefile.tmp -> ~/.bashrc) is never written through. Replacing a
// file goes through NAME.tmp (an old one is unlinked first, not followed) and rename(2),
// which replaces a symlink at NAME itself instead of its target.
#include <sys/types.h>

#include <filesystem>
#include <string_view>

namespace kerncap::files {

namespace fs = std::filesystem;

inline constexpr mode_t kPrivateFile = 0600;
inline constexpr mode_t kPrivateExecutable = 0700;
inline constexpr mode_t kPrivateDir = 0700;

// A file created exclusively; closes on destruction. Errors (Input) name the path.
class NewFile {
 public:
  explicit NewFile(const fs::path& p, mode_t mode = kPrivateFile);
  ~NewFile();
  NewFile(const NewFile&) = delete;
  NewFile& operator=(const NewFile&) = delete;
  void write(const void* data, size_t size);
  void close();
  int fd() const { return fd_; }

 private:
  fs::path path_;
  int fd_ = -1;
};

// Writes a file that must not exist yet (refuses an existing file or symlink).
void write_new_file(const fs::path& p, std::string_view data, mode_t mode = kPrivateFile);
// Writes p through p.tmp and rename(2): readers see the old or the new file, never half of
// one, and a symlink at p or p.tmp is replaced, not followed.
void replace_file(const fs::path& p, std::string_view data, mode_t mode = kPrivateFile);

// mkdir -p with kPrivateDir for every directory it creates (existing ones are the user's and
// keep their mode). A symlink where a directory is wanted is refused only for the last
// component (parents like /home -> /data are normal).
void create_private_dirs(const fs::path& dir);

// p without trailing slashes: "link/" would make lstat and open follow the link.
fs::path itself(const fs::path& p);

// Whether p itself is a symlink (not followed; trailing slashes ignored).
bool is_symlink(const fs::path& p);

// Removes `name` inside directory `dir` (a file, a symlink or a whole tree) without following
// any symlink: a link is unlinked, never its target, so a tree cannot lead the removal outside
// `dir`. `dir` itself must not be a symlink. No-op when `name` does not exist.
void remove_inside(const fs::path& dir, std::string_view name);

}  // namespace kerncap::files
