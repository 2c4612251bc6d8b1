#pragma once
// The launcher's environment: what `kerncap` itself reads from its environment (once,
// here: the only getenv of the offline tools' KERNCAP_* variables) and what it adds to
// the application's.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "format/protocol.hpp"

namespace kerncap::extract {

namespace fs = std::filesystem;

struct HostEnv {
  std::optional<std::string> library;     // the libkerncap.so to inject (format::Var::Library)
  std::optional<std::string> python_dir;  // the kerncap Python package's folder (Var::PythonDir)
  std::optional<std::string> python;      // interpreter for the Triton reproducer (Var::Python)
  std::optional<std::string> injection;   // CUDA_INJECTION64_PATH: another CUDA tool is attached
  std::optional<std::string> pythonpath;  // PYTHONPATH, extended for the Triton shim
};
HostEnv read_host_env();

// Throws Error(Usage) when another CUDA tool already holds the injection slot; `doing`
// says what kerncap was about to do ("capture", "profile").
void refuse_other_tool(const HostEnv& h, std::string_view doing);

// The variables added to the application's environment: the injection library and the
// library's configuration (Config::to_env()).
std::map<std::string, std::string> app_environment(const format::Config& c, const fs::path& library);

}  // namespace kerncap::extract
