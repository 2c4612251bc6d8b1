#include "extract/triton_step.hpp"

#include <cstdio>
#include <string>

#include "extract/launcher.hpp"
#include "format/out_layout.hpp"
#include "format/protocol.hpp"

namespace kerncap::extract {

// The generator's exit code when `--auto` finds no Triton record naming the kernel: the one
// definition, passed on its command line (--not-triton-exit). It must differ from the
// generator's other codes: 0, 1 (a Python traceback), 2 input, 3 device, 70 internal; a
// device error taken for "not Triton" would go unsaid. The generator refuses those too.
constexpr int kGeneratorNotTriton = 4;
static_assert(kGeneratorNotTriton > 3 && kGeneratorNotTriton != 70 && kGeneratorNotTriton <= 125);

fs::path python_dir(const HostEnv& h) {
  if (h.python_dir) return *h.python_dir;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  fs::path installed = exe.parent_path() / "../share/kerncap/python";
  if (fs::exists(installed / "kerncap")) return fs::canonical(installed);
  // pip-installed: this binary is site-packages/kerncap/bin/kerncap, inside the package.
  fs::path package = exe.parent_path().parent_path();
  if (package.filename() == "kerncap" && fs::exists(package / "__init__.py", ec))
    return fs::canonical(package.parent_path(), ec);
  return fs::path(KERNCAP_SOURCE_DIR) / "python";
}

void add_triton_shim(std::map<std::string, std::string>& env, const fs::path& out, const HostEnv& h) {
  fs::path shim = python_dir(h) / "kerncap" / "triton_shim";
  if (!fs::exists(shim)) return;
  env["PYTHONPATH"] = shim.string() + (h.pythonpath ? ":" + *h.pythonpath : "");
  env[std::string(format::env_name(format::Var::TritonOut))] = format::out::triton_dir(out).string();
}

void write_triton_reproducer(const fs::path& out, bool quiet, const HostEnv& h) {
  fs::path records = format::out::triton_dir(out) / format::out::kTritonRecords;
  if (!fs::exists(records) || fs::is_empty(records)) return;
  std::map<std::string, std::string> env = {{"PYTHONPATH", python_dir(h).string()}};
  // The generator reads the capture with, and copies into OUT, this kerncap's own engine
  // (bin/../lib/libkerncap_replay.so), not whichever build its search would find first.
  std::error_code ec;
  const fs::path engine = fs::read_symlink("/proc/self/exe", ec).parent_path() / "../lib/libkerncap_replay.so";
  if (!ec && fs::exists(engine, ec))
    env[std::string(format::env_name(format::Var::ReplayLib))] = fs::weakly_canonical(engine, ec).string();
  AppExit r = run_application({h.python.value_or("python3"), "-m", "kerncap.triton_repro", "--auto",
                               "--not-triton-exit", std::to_string(kGeneratorNotTriton), out.string()},
                              false, env);
  if (r.exited && r.code == 0) {
    if (!quiet) std::fprintf(stderr, "kerncap: wrote the Triton reproducer (kernel_variant.py, reproducer.py)\n");
  } else if (r.exited && r.code == kGeneratorNotTriton) {
    // Not a Triton kernel (a cuBLAS kernel of a PyTorch program): the generator said so in one note.
  } else {
    std::fprintf(stderr, "kerncap: note: no Triton reproducer: the generator %s (see above)\n", r.describe().c_str());
  }
}

}  // namespace kerncap::extract
