#include "storage/capture_writer.hpp"

#include <fmt/format.h>

#include "common/hex.hpp"
#include "common/private_files.hpp"
#include "format/out_layout.hpp"

namespace kerncap::format {

namespace {
constexpr const char* kMemDir = "mem";
constexpr const char* kImageDir = "image";
}  // namespace

CaptureWriter::CaptureWriter(const fs::path& out, long pid) : out_(out), partial_(out::partial_dir(out, pid)) {
  fs::remove_all(partial_);
  // Private: the blobs are the application's memory. The directory's mode is what protects
  // them (the files inside are created by write_file/BlobWriter).
  files::create_private_dirs(partial_ / kMemDir);
  files::create_private_dirs(partial_ / kImageDir);
}

CaptureWriter::~CaptureWriter() {
  chunks_.reset();  // its threads stop before the directory goes
  if (published_) return;
  std::error_code ec;
  fs::remove_all(partial_, ec);
}

std::string CaptureWriter::region_file(uint32_t id) { return fmt::format("{}/{}.bin", kMemDir, id); }

std::string CaptureWriter::image_file(uint64_t hash, std::string_view kind) {
  return fmt::format("{}/{:016x}.{}", kImageDir, hash, kind);
}

void CaptureWriter::write_image(Manifest& m, const void* data, size_t size, uint64_t hash, std::string_view kind) {
  m.image_kind = kind;
  m.image_hash = hash;
  m.image_file = image_file(hash, kind);
  write_file(partial_ / m.image_file, data, size);
}

void CaptureWriter::write_params(Manifest& m, const void* data, size_t size) {
  m.params_size = size;
  write_file(partial_ / m.params_file, data, size);
}

BlobWriter CaptureWriter::open_after(const Manifest& m) const { return BlobWriter(partial_ / m.after_file); }

void CaptureWriter::set_chunk_store(const fs::path& store, int level) {
  store_ = store;
  level_ = level;
}

ChunkWriter& CaptureWriter::chunks() {
  if (!chunks_) {
    ChunkWriter::Options o;
    o.dir = store_.empty() ? partial_ / kChunkDir : store_;
    o.level = level_;
    chunks_ = std::make_unique<ChunkWriter>(o);
  }
  return *chunks_;
}

ChunkStats CaptureWriter::finish_chunks(Manifest& m, const std::vector<std::vector<size_t>>& tickets) {
  ChunkWriter& w = chunks();
  w.finish();
  for (size_t i = 0; i < m.regions.size() && i < tickets.size(); ++i) {
    m.regions[i].file.clear();
    m.regions[i].chunks.clear();
    for (size_t t : tickets[i]) m.regions[i].chunks.push_back(w.ref(t));
  }
  m.format_version = format_version_for(m);
  m.external_store = !store_.empty();
  m.store_hint = store_.empty() ? "" : store_.string();
  for (char& c : m.store_hint)  // for messages only; the reader refuses control characters
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return w.stats();
}

fs::path CaptureWriter::publish(const Manifest& m) {
  write_json_atomic(partial_ / kManifestName, to_json(m));
  fs::path final_dir = out::capture_dir(out_);
  fs::remove_all(final_dir);
  fs::rename(partial_, final_dir);
  published_ = true;
  std::error_code ec;
  fs::remove(out::failure_note(out_), ec);
  return final_dir;
}

namespace {

// Removes OUT/<name> (a partial capture) and leaves the one-line note.
void remove_partial(const fs::path& out, const std::string& name, const std::string& why) {
  uint64_t bytes = 0;
  std::error_code ec;
  const fs::path dir = out / name;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (!it->is_symlink(ec) && it->is_regular_file(ec)) bytes += it->file_size(ec);
  files::remove_inside(out, name);  // links inside are unlinked, never followed
  std::string line =
      fmt::format("capture failed: {} ({} removed: {} written before the failure)", why, name, human_bytes(bytes));
  for (char& c : line)  // one line, whatever the message held
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  files::replace_file(out::failure_note(out), line + "\n");
}

}  // namespace

void CaptureWriter::abandon(const std::string& why) noexcept {
  if (published_) return;
  try {
    chunks_.reset();  // its threads stop before the directory goes
    remove_partial(out_, partial_.filename().string(), why);
  } catch (...) {
    // The destructor still removes the directory; the note is a courtesy.
  }
}

size_t abandon_partials(const fs::path& out, const std::string& why) noexcept {
  size_t n = 0;
  try {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec))
      if (out::is_partial(it->path().filename().string())) names.push_back(it->path().filename().string());
    for (const auto& name : names) {
      remove_partial(out, name, why);
      ++n;
    }
  } catch (...) {
    // Left as it was: readers say the capture never completed.
  }
  return n;
}

}  // namespace kerncap::format
