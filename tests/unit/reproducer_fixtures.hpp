#pragma once
// A small complete capture on disk for the generator tests (no GPU involved).
#include <xxhash.h>

#include <string>
#include <vector>

#include "format/capture_dir.hpp"
#include "source_fixtures.hpp"

namespace kerncap::testing {

inline format::Manifest write_fake_capture(const fs::path& out, const std::string& mangled,
                                           const std::string& demangled, const std::vector<uint8_t>& image = {}) {
  const fs::path dir = out / format::kCaptureDirName;
  fs::create_directories(dir / "mem");
  fs::create_directories(dir / "image");
  format::Manifest m;
  m.tool_version = "test";
  m.command = "./app --n 1024";
  m.device_name = "NVIDIA H100 80GB HBM3";
  m.cc_major = 9;
  m.cc_minor = 0;
  m.mangled_name = mangled;
  m.demangled_name = demangled;
  m.launch_api = "cuLaunchKernel";
  m.grid = {4, 1, 1};
  m.block = {256, 1, 1};
  m.params_size = 8;
  m.params = {{0, 8}};
  m.image_file = "image/00000000000000ab.cubin";
  m.image_kind = "cubin";
  m.regions = {{0, format::MemKind::Device, 0x7f0000000000ull, 256, "mem/0.bin", 0, ""}};
  m.after = {{0, 0, 16, 0}};
  const std::vector<uint8_t> params(8, 0x11), r0(256, 1), after(16, 3);
  const std::vector<uint8_t> img = image.empty() ? std::vector<uint8_t>(64, 0x7f) : image;
  m.image_hash = XXH3_64bits(img.data(), img.size());  // the reader checks it
  format::write_file(dir / m.params_file, params.data(), params.size());
  format::write_file(dir / m.image_file, img.data(), img.size());
  format::write_file(dir / "mem/0.bin", r0.data(), r0.size());
  format::write_file(dir / m.after_file, after.data(), after.size());
  format::write_json_atomic(dir / format::kManifestName, format::to_json(m));
  return m;
}

}  // namespace kerncap::testing
