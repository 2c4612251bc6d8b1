#pragma once
// Writing a capture directory: the layout (mem/, image/, params, after, manifest) and the
// publish step live here; the capturer only decides what to write. Everything goes under
// OUT/capture.partial-<pid> and is renamed to OUT/capture by publish(), so a capture cut
// short (the process died, a step failed) never looks complete. Throws Error(Device) when
// a write fails (disk full, permissions); inside the application the caller logs it.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "format/capture_dir.hpp"
#include "format/chunk_store.hpp"
#include "format/manifest.hpp"

namespace kerncap::format {

class CaptureWriter {
 public:
  // Starts OUT/capture.partial-<pid> afresh (a stale one from an earlier attempt goes).
  CaptureWriter(const fs::path& out, long pid);
  // A writer destroyed before publish() removes its partial directory.
  ~CaptureWriter();
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  // Where the files go until publish(); region blobs are streamed to dir() / region.file.
  const fs::path& dir() const { return partial_; }

  // Names inside the capture directory (the manifest records them).
  static std::string region_file(uint32_t id);                                // mem/<id>.bin
  static std::string image_file(uint64_t hash, std::string_view kind);       // image/<hash>.<kind>

  // Sets m.image_kind/hash/file and writes the image.
  void write_image(Manifest& m, const void* data, size_t size, uint64_t hash, std::string_view kind);
  // Sets m.params_size and writes the parameter buffer to m.params_file.
  void write_params(Manifest& m, const void* data, size_t size);
  // The AFTER blob, streamed while the runs are appended to m.after.
  BlobWriter open_after(const Manifest& m) const;

  // Where BEFORE chunks go: dir()/chunks, or `store` (a shared store) when not empty;
  // `level` is zstd's (0: raw). Call before chunks().
  void set_chunk_store(const fs::path& store, int level);
  // The chunk writer (its threads start at the first call).
  ChunkWriter& chunks();
  // Waits for every chunk, then gives region i the chunks of tickets[i] and records the
  // store in the manifest. Returns what was stored.
  ChunkStats finish_chunks(Manifest& m, const std::vector<std::vector<size_t>>& tickets);

  // Writes the manifest and renames the directory to OUT/capture (replacing an older
  // capture, and the note of an earlier failure); returns the published path.
  fs::path publish(const Manifest& m);
  // The capture failed: removes the partial directory now and leaves OUT/capture.failed,
  // one line saying why and how much was removed (never throws).
  void abandon(const std::string& why) noexcept;

 private:
  fs::path out_;
  fs::path partial_;
  fs::path store_;
  int level_ = kDefaultZstdLevel;
  std::unique_ptr<ChunkWriter> chunks_;
  bool published_ = false;
};

// After the application ended without publishing: removes every OUT/capture.partial-<pid>
// it left (it crashed or was killed while writing) and, when there was one, leaves
// OUT/capture.failed saying so with `why`. Returns how many were removed (never throws).
size_t abandon_partials(const fs::path& out, const std::string& why) noexcept;

}  // namespace kerncap::format
