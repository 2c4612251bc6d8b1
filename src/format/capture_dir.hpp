#pragma once
// Reading a capture directory, and the file helpers its writer (capture_writer.hpp) uses.
// The writer builds everything under OUT/capture.partial-<pid> and renames it to
// OUT/capture only when complete, so an interrupted capture never looks valid.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "format/manifest.hpp"
#include "format/out_layout.hpp"

namespace kerncap::format {

namespace fs = std::filesystem;

inline constexpr std::string_view kCaptureDirName = out::kCapture;
inline constexpr const char* kManifestName = "manifest.json";

// Accepts either the reproducer directory (OUT) or OUT/capture itself.
fs::path resolve_capture_dir(const fs::path& dir);

// Reads and checks a capture: manifest version, every referenced file present with the
// size the manifest says. Throws Error(Input) with what is wrong and what to do.
struct Capture {
  fs::path dir;
  Manifest manifest;
  fs::path path(const std::string& rel) const { return dir / rel; }
};
Capture open_capture(const fs::path& dir);

// Whole small files (params, image).
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

class BlobReader {
 public:
  explicit BlobReader(const fs::path& p);
  ~BlobReader();
  BlobReader(const BlobReader&) = delete;
  BlobReader& operator=(const BlobReader&) = delete;
  void read_at(uint64_t offset, void* data, size_t size);
  uint64_t size() const { return size_; }

 private:
  fs::path path_;
  std::FILE* f_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace kerncap::format
