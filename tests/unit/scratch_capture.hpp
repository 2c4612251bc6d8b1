#pragma once
// Test helpers shared by the unit tests that need files on disk: a scratch directory that
// removes itself, and a small but complete capture (one 256-byte device region, an 8-byte
// parameter buffer, a stand-in image) written the way the capture library writes one.
#include <gtest/gtest.h>

#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "format/capture_dir.hpp"
#include "format/chunk_store.hpp"

#include <nlohmann/json.hpp>

namespace kerncap::testing {

class ScratchDir : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    out_ = std::filesystem::temp_directory_path() /
           ("kerncap-unit-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(out_);
    std::filesystem::create_directories(out_);
  }
  void TearDown() override { std::filesystem::remove_all(out_); }
  std::filesystem::path out_;
};

// OUT/capture with manifest, params, image and region 0 (bytes `fill`); returns the manifest.
inline format::Manifest write_small_capture(const std::filesystem::path& out, uint8_t fill = 1) {
  using namespace format;
  const std::filesystem::path dir = out / kCaptureDirName;
  std::filesystem::create_directories(dir / "mem");
  std::filesystem::create_directories(dir / "image");
  Manifest m;
  m.tool_version = "test";
  m.mangled_name = "_Z6kernelPf";
  m.demangled_name = "kernel(float*)";
  m.params_size = 8;
  m.params = {{0, 8}};
  m.image_file = "image/00000000000000ab.cubin";
  m.image_kind = "cubin";
  m.regions = {{0, MemKind::Device, 0x7f0000000000ull, 256, "mem/0.bin", 0, ""}};
  const std::vector<uint8_t> params(8, 0), image(100, 0x7f), r0(256, fill);
  m.image_hash = XXH3_64bits(image.data(), image.size());  // the reader checks it
  write_file(dir / m.params_file, params.data(), params.size());
  write_file(dir / m.image_file, image.data(), image.size());
  write_file(dir / "mem/0.bin", r0.data(), r0.size());
  write_file(dir / m.after_file, nullptr, 0);
  write_json_atomic(dir / kManifestName, to_json(m));
  return m;
}

// A scratch directory holding write_small_capture's capture, for tests that edit its manifest:
// dir_ = OUT/capture, original_ = the manifest as written; put()/put_text() replace it.
class SmallCaptureDir : public ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    write_small_capture(out_);
    dir_ = out_ / format::kCaptureDirName;
    std::ifstream in(dir_ / format::kManifestName);
    original_ = nlohmann::json::parse(in);
  }
  void put_text(const std::string& text) const {
    std::filesystem::remove(dir_ / format::kManifestName);
    std::ofstream(dir_ / format::kManifestName, std::ios::binary) << text;
  }
  void put(const nlohmann::json& j) const { put_text(j.dump()); }
  std::filesystem::path dir_;
  nlohmann::json original_;
};

// Format version 3: region 0 of write_small_capture becomes `data.size()` bytes whose stored
// runs `runs` (default: the whole region) are kept as chunks of `window` bytes under
// chunks/ (or in `store`, marked external), as the capture library writes them.
inline format::Manifest write_chunked_capture(const std::filesystem::path& out, const std::vector<uint8_t>& data,
                                              std::vector<format::StoredRun> runs = {}, uint64_t window = 4096,
                                              const std::filesystem::path& store = {}) {
  using namespace format;
  const std::filesystem::path dir = out / kCaptureDirName;
  Manifest m = write_small_capture(out);
  std::filesystem::remove(dir / "mem/0.bin");
  if (runs.empty()) runs = {{0, data.size()}};
  Region& r = m.regions[0];
  r.size = data.size();
  r.file.clear();
  r.stored = runs;
  ChunkWriter::Options o;
  o.dir = store.empty() ? dir / kChunkDir : store;
  o.threads = 2;
  ChunkWriter w(o);
  RegionChunker chunker(w, window);
  XXH64_state_t* h = XXH64_createState();
  XXH64_reset(h, 0);
  for (const auto& run : runs) {
    chunker.add(run.offset, data.data() + run.offset, run.size);
    XXH64_update(h, data.data() + run.offset, run.size);
  }
  r.xxh64 = XXH64_digest(h);
  XXH64_freeState(h);
  const std::vector<size_t> tickets = chunker.finish();
  w.finish();
  for (size_t t : tickets) r.chunks.push_back(w.ref(t));
  m.external_store = !store.empty();
  m.store_hint = store.string();
  m.format_version = format_version_for(m);  // 3: no textures
  std::filesystem::remove(dir / kManifestName);
  write_json_atomic(dir / kManifestName, to_json(m));
  return m;
}

}  // namespace kerncap::testing
