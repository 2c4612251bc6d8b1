#pragma once
// Test helpers shared by the unit tests that need files on disk: a scratch directory that
// removes itself, and a small but complete capture (one 256-byte device region, an 8-byte
// parameter buffer, a stand-in image) written the way the capture library writes one.
#include <gtest/gtest.h>

#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "format/capture_dir.hpp"

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

}  // namespace kerncap::testing
