#include "format/capture_dir.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::format {

fs::path resolve_capture_dir(const fs::path& dir) {
  if (fs::exists(dir / kManifestName)) return dir;
  if (fs::exists(dir / kCaptureDirName / kManifestName)) return dir / kCaptureDirName;
  if (!fs::exists(dir)) input_error(fmt::format("{}: no such directory", dir.string()));
  for (const auto& e : fs::directory_iterator(dir))
    if (out::is_partial(e.path().filename().string()))
      input_error(fmt::format("{}: the capture in it never completed ({} is partial: the application "
                              "stopped or crashed while it was written); extract again",
                              dir.string(), e.path().filename().string()));
  input_error(fmt::format("{}: not a kerncap capture (no {} and no {}/{})", dir.string(), kManifestName,
                          kCaptureDirName, kManifestName));
}

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) input_error(fmt::format("cannot open {}: {}", p.string(), std::strerror(errno)));
  in.seekg(0, std::ios::end);
  std::vector<uint8_t> data(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!in) input_error(fmt::format("cannot read {}", p.string()));
  return data;
}

void write_file(const fs::path& p, const void* data, size_t size) {
  BlobWriter w(p);
  w.write(data, size);
  w.close();
}

void write_json_atomic(const fs::path& p, const nlohmann::json& j) {
  fs::path tmp = p;
  tmp += ".tmp";
  std::string text = j.dump(1);
  text += '\n';
  write_file(tmp, text.data(), text.size());
  fs::rename(tmp, p);
}

Capture open_capture(const fs::path& dir_in) {
  Capture c;
  c.dir = resolve_capture_dir(dir_in);
  nlohmann::json j;
  try {
    std::ifstream in(c.dir / kManifestName);
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    input_error(fmt::format("{}: manifest is not valid JSON ({}); the capture is damaged, extract again",
                            (c.dir / kManifestName).string(), e.what()));
  }
  c.manifest = from_json(j);
  const Manifest& m = c.manifest;
  auto expect_size = [&](const std::string& rel, uint64_t size, const char* what) {
    fs::path p = c.dir / rel;
    std::error_code ec;
    uint64_t actual = fs::file_size(p, ec);
    if (ec) input_error(fmt::format("capture is missing {} ({}): extract again", rel, what));
    if (actual != size)
      input_error(fmt::format("capture file {} ({}) has {} bytes, the manifest says {}: the capture is "
                              "truncated or damaged; extract again",
                              rel, what, actual, size));
  };
  expect_size(m.params_file, m.params_size, "parameter bytes");
  if (m.image_file.empty() || !fs::exists(c.dir / m.image_file))
    input_error(fmt::format("capture has no code image ({}): extract again", m.image_file));
  for (const auto& r : m.regions) expect_size(r.file, r.size, "BEFORE memory");
  uint64_t after_total = 0;
  for (const auto& a : m.after) after_total = std::max(after_total, a.file_offset + a.size);
  expect_size(m.after_file, after_total, "AFTER memory");
  return c;
}

BlobWriter::BlobWriter(const fs::path& p) : path_(p) {
  f_ = std::fopen(p.c_str(), "wb");
  if (!f_) device_error(fmt::format("cannot create {}: {}", p.string(), std::strerror(errno)));
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

BlobReader::BlobReader(const fs::path& p) : path_(p) {
  f_ = std::fopen(p.c_str(), "rb");
  if (!f_) input_error(fmt::format("cannot open {}: {}", p.string(), std::strerror(errno)));
  std::error_code ec;
  size_ = fs::file_size(p, ec);
}

BlobReader::~BlobReader() {
  if (f_) std::fclose(f_);
}

void BlobReader::read_at(uint64_t offset, void* data, size_t size) {
  if (offset + size > size_)
    input_error(fmt::format("{}: read past the end ({} + {} > {}): the capture is truncated", path_.string(),
                            offset, size, size_));
  if (std::fseek(f_, static_cast<long>(offset), SEEK_SET) != 0 || std::fread(data, 1, size, f_) != size)
    input_error(fmt::format("{}: read failed at offset {}", path_.string(), offset));
}

}  // namespace kerncap::format
