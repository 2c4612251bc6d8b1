#pragma once
// Helpers of the lint tests: a tiny capture directory around a fixture code object, and
// whether a SASS disassembler can be run here (nvdisasm is not in every toolkit install).
#include <gtest/gtest.h>

#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "cubin_fixtures.hpp"
#include "format/capture_dir.hpp"
#include "lint/disassembler.hpp"

namespace kerncap::lint::testing {

namespace fs = std::filesystem;

// A fresh empty directory, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("kerncap-lint-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// OUT/capture holding `image` as the code object of `kernel`, launched with `block` threads
// and `dynamic_shared` bytes on an sm_`sm` device. No memory regions: lint reads none.
inline format::Capture make_capture(const fs::path& out, const std::vector<uint8_t>& image, const std::string& kernel,
                                    uint32_t block, uint32_t dynamic_shared = 0, int sm = 90) {
  const fs::path dir = out / format::kCaptureDirName;
  fs::create_directories(dir / "image");
  format::Manifest m;
  m.tool_version = "test";
  m.mangled_name = kernel;
  m.cc_major = sm / 10;
  m.cc_minor = sm % 10;
  m.block = {block, 1, 1};
  m.shared_mem_bytes = dynamic_shared;
  m.image_file = "image/0000000000000001.bin";
  m.image_kind = "cubin";
  m.image_hash = XXH3_64bits(image.data(), image.size());  // the reader checks it
  format::write_file(dir / m.image_file, image.data(), image.size());
  format::write_file(dir / m.params_file, "", 0);
  format::write_file(dir / m.after_file, "", 0);
  format::write_json_atomic(dir / format::kManifestName, format::to_json(m));
  return format::open_capture(out);
}

// "nvdisasm" or its /usr/local/cuda/bin path when one runs here, else "".
inline std::string find_nvdisasm() {
  // The build copies install-deps' pinned nvdisasm beside bin/kerncap: that one first.
  static const std::string built = std::string(KERNCAP_BINARY_DIR) + "/bin/nvdisasm";
  for (const char* p : {built.c_str(), "nvdisasm", "/usr/local/cuda/bin/nvdisasm"}) {
    const auto r = run_tool({p, "--version"});
    if (r && r->status == 0) return p;
  }
  return "";
}

}  // namespace kerncap::lint::testing

#define KC_NEED_NVDISASM(var)                                                                   \
  const std::string var = ::kerncap::lint::testing::find_nvdisasm();                           \
  if (var.empty()) GTEST_SKIP() << "no nvdisasm on PATH or in /usr/local/cuda/bin (not every " \
                                   "toolkit install has it)"
