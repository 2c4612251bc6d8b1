#pragma once
// Reading a capture directory, and the file helpers its writer (capture_writer.hpp) uses.
// The writer builds everything under OUT/capture.partial-<pid> and renames it to
// OUT/capture only when complete, so an interrupted capture never looks valid.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "format/chunk_store.hpp"
#include "format/manifest.hpp"
#include "format/out_layout.hpp"
#include "format/safe_file.hpp"

namespace kerncap::format {

namespace fs = std::filesystem;

inline constexpr std::string_view kCaptureDirName = out::kCapture;
inline constexpr const char* kManifestName = "manifest.json";

// Accepts either the reproducer directory (OUT) or OUT/capture itself.
fs::path resolve_capture_dir(const fs::path& dir);

// Readers and prune on one capture at once (issue 38's fault matrix): an flock(2) on the capture
// directory. Every open capture holds it shared for as long as a copy of the Capture lives (a
// validate, a serve or a Python Session for hours); prune, which rewrites the manifest and
// deletes the chunk files the old one named, holds it exclusively. So a reader never sees a
// manifest whose chunks were just deleted, and two prunes run one after the other. flock is
// advisory and per open file description; where the file system has none (ENOLCK), readers go
// on without it.
class CaptureLock {
 public:
  enum class Mode { Shared, Exclusive };
  // Waits up to `wait` (polling), then throws Error(Usage) saying who holds the capture.
  CaptureLock(const fs::path& dir, Mode mode, std::chrono::milliseconds wait);
  ~CaptureLock();
  CaptureLock(const CaptureLock&) = delete;
  CaptureLock& operator=(const CaptureLock&) = delete;

 private:
  int fd_ = -1;
};
// How long a reader waits for a prune in progress, and a prune for readers to finish.
inline constexpr std::chrono::milliseconds kReaderLockWait{std::chrono::minutes(10)};
inline constexpr std::chrono::milliseconds kPruneLockWait{std::chrono::seconds(10)};

// Reads and checks a capture, which is untrusted input (docs/contracts.md, "Reading a
// capture"): the manifest through the strict reader (manifest.hpp), every file it names
// confined to the directory (safe_file.hpp), a regular file of the size the manifest says,
// and the code image's hash. Throws Error(Input) with what is wrong and what to do.
struct Capture {
  fs::path dir;
  Manifest manifest;
  // The shared chunk store the user named (default_store()), for a capture whose chunks are
  // in one (Manifest::external_store); never a path taken from the capture.
  std::optional<fs::path> store;
  ChunkSource chunk_source() const { return {dir, manifest.external_store, store, manifest.store_hint}; }
  // For messages and for tools that take a path (a disassembler). To read a file of the
  // capture use read() or blob(): they do not follow links.
  fs::path path(const std::string& rel) const { return dir / rel; }
  // A file the manifest names, read confined to the directory.
  std::vector<uint8_t> read(const std::string& rel, const std::string& what) const;
  // The code image, checked against the hash the capture recorded.
  std::vector<uint8_t> read_image() const;
  // Held (shared) while any copy of this Capture lives; exclusive for prune.
  std::shared_ptr<const CaptureLock> lock;
};
// `store`: where a capture's shared chunk store is (default: default_store()). A capture
// that keeps its chunks in a store opens without one (info shows it); reading its BEFORE
// bytes then asks for --store.
Capture open_capture(const fs::path& dir);
Capture open_capture(const fs::path& dir, const std::optional<fs::path>& store);
// The same, the capture locked exclusively (prune): waits up to kPruneLockWait for readers.
Capture open_capture_exclusive(const fs::path& dir, const std::optional<fs::path>& store);

// Reads every region's stored bytes (every chunk decompressed and checked against its name)
// and hashes them against the hash the capture recorded (0: not recorded); throws
// Error(Input) naming the first that differs (`--verify`).
void verify_blobs(const Capture& c);

// Whole small files (params, image) at a path the user named; only regular files.
std::vector<uint8_t> read_file(const fs::path& p);
void write_file(const fs::path& p, const void* data, size_t size);
void write_json_atomic(const fs::path& p, const nlohmann::json& j);

// A plain FILE* wrapper that throws on error; used for streaming big blobs.
class BlobWriter {
 public:
  explicit BlobWriter(const fs::path& p);
  ~BlobWriter();
  BlobWriter(const BlobWriter&) = delete;
  BlobWriter& operator=(const BlobWriter&) = delete;
  void write(const void* data, size_t size);
  uint64_t offset() const { return offset_; }
  void close();

 private:
  fs::path path_;
  std::FILE* f_ = nullptr;
  uint64_t offset_ = 0;
};

// Random access to a big blob; refuses links and anything but a regular file.
class BlobReader {
 public:
  explicit BlobReader(const fs::path& p) : file_(ReadOnlyFile::open(p, false)) {}
  // `rel` inside a capture directory, confined (ReadOnlyFile::open_in).
  BlobReader(const fs::path& dir, const std::string& rel, const std::string& what)
      : file_(ReadOnlyFile::open_in(dir, rel, what)) {}
  void read_at(uint64_t offset, void* data, size_t size) { file_.read_at(offset, data, size); }
  uint64_t size() const { return file_.size(); }

 private:
  ReadOnlyFile file_;
};

}  // namespace kerncap::format
