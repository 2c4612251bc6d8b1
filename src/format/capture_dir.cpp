#include "format/capture_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/private_files.hpp"
#include "format/out_layout.hpp"
#include "format/region_bytes.hpp"
#include "format/safe_file.hpp"
#include "format/strict_json.hpp"

namespace kerncap::format {

fs::path resolve_capture_dir(const fs::path& dir) {
  // error_code forms throughout: a path we may not stat is the input's problem, not a bug.
  std::error_code ec;
  if (fs::exists(dir / kManifestName, ec)) return dir;
  // OUT/capture is the name kerncap picks inside OUT: it must be OUT's own directory, not a
  // link that leads to a capture elsewhere (issue 38: read, and pruned, through such a link).
  // A capture directory the user names itself may be a link: that is their choice.
  const fs::path inner = dir / kCaptureDirName;
  if (fs::is_symlink(inner, ec))
    input_error(fmt::format("{} is a symbolic link (to {}); kerncap reads the capture inside OUT and does not follow "
                            "a link out of it: name the capture directory itself if you mean that one",
                            inner.string(), fs::read_symlink(inner, ec).string()));
  if (fs::exists(inner / kManifestName, ec)) return inner;
  if (!fs::exists(dir, ec)) input_error(fmt::format("{}: no such directory", dir.string()));
  if (!fs::is_directory(dir, ec)) input_error(fmt::format("{}: not a directory", dir.string()));
  if (fs::is_regular_file(out::failure_note(dir), ec)) {
    std::string line;
    try {
      const ReadOnlyFile note = ReadOnlyFile::open_in(dir, std::string(out::kCaptureFailed), "the failure note");
      std::vector<uint8_t> bytes(std::min<uint64_t>(note.size(), 1000));
      note.read_at(0, bytes.data(), bytes.size());
      for (uint8_t b : bytes) line += b >= 0x20 && b != 0x7f ? static_cast<char>(b) : ' ';
    } catch (const Error&) {
      line = "unreadable";
    }
    input_error(fmt::format("{}: the last capture into it failed ({}: {}); extract again", dir.string(),
                            std::string(out::kCaptureFailed), line));
  }
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (out::is_partial(it->path().filename().string()))
      input_error(fmt::format("{}: the capture in it never completed ({} is partial: the application "
                              "stopped or crashed while it was written); extract again",
                              dir.string(), it->path().filename().string()));
  input_error(fmt::format("{}: not a kerncap capture (no {} and no {}/{})", dir.string(), kManifestName,
                          kCaptureDirName, kManifestName));
}

std::vector<uint8_t> read_file(const fs::path& p) { return ReadOnlyFile::open(p).read_all(); }

void write_file(const fs::path& p, const void* data, size_t size) {
  // Replaces a file of that name: unlinking removes a planted symlink itself (never its
  // target), and the exclusive create below refuses one planted again in between.
  ::unlink(p.c_str());
  BlobWriter w(p);
  w.write(data, size);
  w.close();
}

void write_json_atomic(const fs::path& p, const nlohmann::json& j) {
  fs::path tmp = p;
  tmp += ".tmp";
  ::unlink(tmp.c_str());  // a stale or planted NAME.tmp is removed, never followed
  std::string text = j.dump(1);
  text += '\n';
  write_file(tmp, text.data(), text.size());
  fs::rename(tmp, p);
}

std::vector<uint8_t> Capture::read(const std::string& rel, const std::string& what) const {
  return ReadOnlyFile::open_in(dir, rel, what).read_all();
}

namespace {
// Larger than any code object a module load takes: a bigger "image" is refused unread.
constexpr uint64_t kMaxImageBytes = uint64_t{4} << 30;
}  // namespace

std::vector<uint8_t> Capture::read_image() const {
  std::vector<uint8_t> image =
      ReadOnlyFile::open_in(dir, manifest.image_file, "the kernel's code image").read_all(kMaxImageBytes);
  // An empty file hashes to a value like any other, so a crafted capture could name one with a
  // matching hash; but no module load takes zero bytes (issue 38: info --verify, prune and
  // extract accepted it).
  if (image.empty())
    input_error(fmt::format("capture file {} (the kernel's code image) is empty: no module load takes 0 bytes, so the "
                            "capture is damaged or crafted; extract again",
                            manifest.image_file));
  // The capture names its image by this hash (XXH3 of the bytes the application loaded).
  if (XXH3_64bits(image.data(), image.size()) != manifest.image_hash)
    input_error(fmt::format("capture file {} (the kernel's code image) does not match the hash the capture "
                            "recorded ({}): the file was changed or damaged after the capture; extract again",
                            manifest.image_file, hex_addr(manifest.image_hash)));
  return image;
}

CaptureLock::CaptureLock(const fs::path& dir, Mode mode, std::chrono::milliseconds wait) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) return;  // the reads that follow say what is wrong with the directory
  const int op = (mode == Mode::Exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (::flock(fd_, op) == 0) return;
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {  // no locks on this file system (ENOLCK): go on without
      ::close(fd_);
      fd_ = -1;
      return;
    }
    if (std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(fd_);
  fd_ = -1;
  const long secs = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(wait).count());
  if (mode == Mode::Exclusive)
    usage_error(fmt::format("{} is open in another kerncap process (validate, replay, serve, footprint, a Python "
                            "Session or another prune; waited {} s): prune rewrites the manifest and deletes the "
                            "chunk files that process reads, so it waits for it. Run prune when it is done (stop a "
                            "`kerncap serve` with `kerncap serve --stop`)",
                            dir.string(), secs));
  usage_error(fmt::format("{} is being pruned by another process, which did not finish in {} s; run again when it "
                          "is done",
                          dir.string(), secs));
}

CaptureLock::~CaptureLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

namespace {

Capture open_checked(const fs::path& dir_in, const std::optional<fs::path>& store, CaptureLock::Mode mode) {
  Capture c;
  c.dir = resolve_capture_dir(dir_in);
  c.store = store;
  // Before the manifest is read: a prune in progress finishes first (its manifest and chunks
  // are then read together), and a prune that comes later waits for this Capture.
  c.lock = std::make_shared<const CaptureLock>(c.dir, mode,
                                               mode == CaptureLock::Mode::Exclusive ? kPruneLockWait : kReaderLockWait);
  const std::vector<uint8_t> text = ReadOnlyFile::open_in(c.dir, kManifestName, "the manifest").read_all(kMaxJsonBytes);
  const JsonDoc doc{(c.dir / kManifestName).string(), "the capture is damaged, extract again"};
  c.manifest = from_json(parse_bounded_json(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), doc));
  const Manifest& m = c.manifest;
  auto expect_size = [&](const std::string& rel, uint64_t size, const char* what) {
    const uint64_t actual = ReadOnlyFile::open_in(c.dir, rel, what).size();
    if (actual != size)
      input_error(fmt::format("capture file {} ({}) has {} bytes, the manifest says {}: the capture is "
                              "truncated or damaged; extract again",
                              rel, what, actual, size));
  };
  expect_size(m.params_file, m.params_size, "parameter bytes");
  c.read_image();
  // Chunks: each distinct one exists with its size (its bytes are checked when read). Those
  // of a shared store only when the store was named.
  std::set<std::pair<uint64_t, uint64_t>> chunks;
  const ChunkSource src = c.chunk_source();
  for (const auto& r : m.regions) {
    if (!r.file.empty()) expect_size(r.file, stored_bytes(r), "BEFORE memory");
    if (src.external && !src.store) continue;
    for (const auto& ch : r.chunks)
      if (chunks.insert({ch.hash_hi, ch.hash_lo}).second) check_chunk_file(src, ch);
  }
  uint64_t after_total = 0;  // check_manifest made sure this does not wrap
  for (const auto& a : m.after) after_total += a.size;
  expect_size(m.after_file, after_total, "AFTER memory");
  return c;
}

}  // namespace

Capture open_capture(const fs::path& dir) { return open_capture(dir, default_store()); }

namespace {

Capture open_as(const fs::path& dir, const std::optional<fs::path>& store, CaptureLock::Mode mode) {
  // Whatever a damaged or crafted capture makes the standard library throw is still the
  // input's fault: never let it reach main() as an internal error.
  try {
    return open_checked(dir, store, mode);
  } catch (const Error&) {
    throw;
  } catch (const nlohmann::json::exception& e) {
    input_error(fmt::format("{}: the capture's manifest is unreadable ({}); extract again", dir.string(), e.what()));
  } catch (const fs::filesystem_error& e) {
    input_error(fmt::format("{}: cannot read the capture ({})", dir.string(), e.what()));
  } catch (const std::bad_alloc&) {
    input_error(fmt::format("{}: the capture asks for more memory than there is; it is damaged or crafted", dir.string()));
  } catch (const std::length_error& e) {
    input_error(fmt::format("{}: the capture holds an impossible size ({})", dir.string(), e.what()));
  }
}

}  // namespace

Capture open_capture(const fs::path& dir, const std::optional<fs::path>& store) {
  return open_as(dir, store, CaptureLock::Mode::Shared);
}

Capture open_capture_exclusive(const fs::path& dir, const std::optional<fs::path>& store) {
  return open_as(dir, store, CaptureLock::Mode::Exclusive);
}

void verify_blobs(const Capture& c) {
  std::vector<uint8_t> buf(size_t{64} << 20);
  for (const auto& r : c.manifest.regions) {
    RegionBytes in(c, r);
    std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> h(XXH64_createState(), &XXH64_freeState);
    XXH64_reset(h.get(), 0);
    // Read whole even without a recorded hash: every chunk is checked against its name.
    for (uint64_t off = 0; off < in.stored_size();) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), in.stored_size() - off));
      in.read_stored(off, buf.data(), n);
      XXH64_update(h.get(), buf.data(), n);
      off += n;
    }
    if (r.xxh64 != 0 && XXH64_digest(h.get()) != r.xxh64)  // 0: not recorded
      input_error(fmt::format("{} (BEFORE memory of region {}) does not match the hash the capture recorded: it "
                              "was changed or damaged after the capture; extract again",
                              r.file.empty() ? std::string("the chunks") : "capture file " + r.file, r.id));
  }
}

// Private (0600 whatever the umask: the blobs are the application's device memory) and never
// through a symlink planted at the name (O_NOFOLLOW); buffered through stdio for speed.
BlobWriter::BlobWriter(const fs::path& p) : path_(p) {
  // Exclusive: every blob is a new file in a directory kerncap just created (or a NAME.tmp
  // that was unlinked first), so anything already there was planted and is never written through.
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, files::kPrivateFile);
  if (fd >= 0 && ::fchmod(fd, files::kPrivateFile) == 0) f_ = ::fdopen(fd, "wb");
  if (!f_) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    device_error(fmt::format("cannot create {}: {}", p.string(),
                             err == ELOOP    ? "it is a symbolic link (refused)"
                             : err == EEXIST ? "a file of that name already exists (refused)"
                                             : std::strerror(err)));
  }
}

BlobWriter::~BlobWriter() {
  if (f_) std::fclose(f_);
}

void BlobWriter::write(const void* data, size_t size) {
  if (size && std::fwrite(data, 1, size, f_) != size)
    device_error(fmt::format("writing {} failed: {} (disk full?)", path_.string(), std::strerror(errno)));
  offset_ += size;
}

void BlobWriter::close() {
  if (!f_) return;
  int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) device_error(fmt::format("closing {} failed: {}", path_.string(), std::strerror(errno)));
}

}  // namespace kerncap::format
