#include "extract/environment.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::extract {
namespace {

constexpr const char* kInjectionVar = "CUDA_INJECTION64_PATH";  // the CUDA driver's, not ours
constexpr const char* kNvtxInjectionVar = "NVTX_INJECTION64_PATH";  // NVTX's

std::optional<std::string> get(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

}  // namespace

HostEnv read_host_env() {
  using format::env_name;
  using format::Var;
  HostEnv h;
  h.library = get(env_name(Var::Library));
  h.python_dir = get(env_name(Var::PythonDir));
  h.python = get(env_name(Var::Python));
  h.injection = get(kInjectionVar);
  h.pythonpath = get("PYTHONPATH");
  return h;
}

void refuse_other_tool(const HostEnv& h, std::string_view doing) {
  if (!h.injection) return;
  usage_error(fmt::format("{} is already set ({}): another CUDA tool (nsys, ncu...) is attached; kerncap cannot "
                          "{} beside it. Run kerncap outside that tool",
                          kInjectionVar, *h.injection, doing));
}

std::map<std::string, std::string> app_environment(const format::Config& c, const fs::path& library) {
  std::map<std::string, std::string> env = c.to_env();
  env[kInjectionVar] = library.string();
  // A window bounded by an NVTX range: NVTX hands its calls to the library this names, and
  // libkerncap.so hands them to CUPTI (capture/window_nvtx_inject.cpp). Set before the
  // application starts: NVTX reads it once, at its first call, which may precede cuInit.
  if (!c.window_range.empty()) env[kNvtxInjectionVar] = library.string();
  return env;
}

}  // namespace kerncap::extract
