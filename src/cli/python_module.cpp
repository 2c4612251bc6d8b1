#include "cli/python_module.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/error.hpp"
#include "extract/environment.hpp"
#include "extract/triton_step.hpp"
#include "format/protocol.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;

void exec_python_module(const PythonModule& m) {
  const extract::HostEnv h = extract::read_host_env();
  const std::string python = !m.python.empty() ? m.python : h.python.value_or("python3");
  // Every kerncap the module runs is this one, not whichever PATH would find first.
  const std::string bin_var(format::env_name(format::Var::Bin));
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && !std::getenv(bin_var.c_str())) ::setenv(bin_var.c_str(), self.string().c_str(), 1);
  // And every engine it loads is this kerncap's (bin/../lib), not whichever the package's own
  // search finds: a build or staged copy whose Python package is the source tree's has no
  // library beside that package (on the H200, `kerncap evaluate` on a regime set found none).
  const std::string lib_var(format::env_name(format::Var::ReplayLib));
  const fs::path engine = self.parent_path() / "../lib/libkerncap_replay.so";
  if (!ec && !std::getenv(lib_var.c_str()) && fs::is_regular_file(engine, ec))
    ::setenv(lib_var.c_str(), fs::weakly_canonical(engine, ec).string().c_str(), 1);
  // The package that belongs to this kerncap (installed beside it, or the source tree), after
  // the user's own PYTHONPATH: when the package folder is site-packages, putting it first would
  // hide every module the user placed ahead of site-packages on purpose.
  const fs::path pkg = extract::python_dir(h);
  if (fs::exists(pkg / "kerncap" / "__init__.py", ec)) {
    const std::string path = (h.pythonpath && !h.pythonpath->empty() ? *h.pythonpath + ":" : "") + pkg.string();
    ::setenv("PYTHONPATH", path.c_str(), 1);
  }
  std::vector<std::string> args = {python, "-m", m.module};
  args.insert(args.end(), m.args.begin(), m.args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(python.c_str(), argv.data());
  usage_error(fmt::format("cannot run {}: {}. This command needs Python 3{}; name the interpreter with --python or {}",
                          python, std::strerror(errno), m.needs.empty() ? "" : " with " + m.needs,
                          format::env_name(format::Var::Python)));
}

}  // namespace kerncap::cli
