#include "footprint/sanitizer_api.hpp"

#include <dlfcn.h>

#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::footprint {
namespace fs = std::filesystem;
namespace {

constexpr const char* kLibrary = "libsanitizer-public.so";

// Resolves every entry point; empty string on success, else what is missing.
std::string resolve(void* handle, SanitizerApi& api) {
  std::string missing;
#define KERNCAP_SANITIZER_RESOLVE(name)                                       \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));      \
  if (!api.name) missing += #name " ";
  KERNCAP_SANITIZER_FUNCS(KERNCAP_SANITIZER_RESOLVE)
#undef KERNCAP_SANITIZER_RESOLVE
  return missing;
}

SanitizerApi load(const std::optional<fs::path>& explicit_path) {
  std::vector<std::string> candidates;
  if (explicit_path) {
    candidates.push_back(explicit_path->string());
  } else {
    std::error_code ec;
    const fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
    candidates = {(dir / "../lib" / kLibrary).string(), (dir / kLibrary).string(), kLibrary,
                  std::string("/usr/local/cuda/compute-sanitizer/") + kLibrary};
  }
  std::string tried;
  for (const auto& c : candidates) {
    const bool is_path = c.find('/') != std::string::npos;
    if (is_path && !fs::exists(c)) {
      tried += fmt::format("\n  {}: no such file", c);
      continue;
    }
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      tried += fmt::format("\n  {}: {}", c, dlerror());
      continue;
    }
    SanitizerApi api;
    std::string missing = resolve(h, api);
    if (!missing.empty()) {
      tried += fmt::format("\n  {}: lacks {}(too old?)", c, missing);
      dlclose(h);
      continue;
    }
    char real[4096] = {};
    api.path = dlinfo(h, RTLD_DI_ORIGIN, real) == 0 ? fs::path(real) / fs::path(c).filename() : fs::path(c);
    return api;
  }
  usage_error(fmt::format(
      "footprint needs libsanitizer-public.so: it could not be loaded from{}\n"
      "Build kerncap after scripts/install-deps.sh (which installs the nvidia-cuda-sanitizer-api package; the build "
      "copies the library beside kerncap), or pass --sanitizer-lib PATH (the CUDA toolkit has one in "
      "compute-sanitizer/).",
      tried));
}

}  // namespace

const SanitizerApi& load_sanitizer(const std::optional<fs::path>& explicit_path) {
  // One library per process: the first successful load wins.
  static const SanitizerApi api = load(explicit_path);
  return api;
}

std::string sanitizer_error_text(const SanitizerApi& api, SanitizerResult r, const char* call, const char* file,
                                 int line) {
  const char* text = nullptr;
  if (api.sanitizerGetResultString) api.sanitizerGetResultString(r, &text);
  return fmt::format("{} failed: {} ({}) at {}:{}", call, static_cast<int>(r), text ? text : "unknown sanitizer error",
                     file, line);
}

}  // namespace kerncap::footprint
