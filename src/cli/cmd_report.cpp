// `kerncap report OUT`: one self-contained HTML page about a capture or a regime set. The page
// is written by Python (python/kerncap/report.py: matplotlib SVG charts); this command finds
// the interpreter and the package, as `kerncap mcp` does, and replaces itself with
// `python3 -m kerncap.report ARGS`.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "extract/environment.hpp"
#include "format/protocol.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;

namespace {

struct ReportArgs {
  std::string out, verdict, output, python;
  bool no_lint = false;
};

[[noreturn]] void run_report(const ReportArgs& a) {
  const extract::HostEnv h = extract::read_host_env();
  const std::string python = !a.python.empty() ? a.python : h.python.value_or("python3");
  // The lint it runs is this kerncap's.
  const std::string bin_var(format::env_name(format::Var::Bin));
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && !std::getenv(bin_var.c_str())) ::setenv(bin_var.c_str(), self.string().c_str(), 1);
  const fs::path pkg = extract::python_dir(h);
  if (fs::exists(pkg / "kerncap" / "report.py", ec)) {
    const std::string path = (h.pythonpath && !h.pythonpath->empty() ? *h.pythonpath + ":" : "") + pkg.string();
    ::setenv("PYTHONPATH", path.c_str(), 1);
  }
  std::vector<std::string> args = {python, "-m", "kerncap.report", a.out};
  if (!a.verdict.empty()) args.insert(args.end(), {"--verdict", a.verdict});
  if (!a.output.empty()) args.insert(args.end(), {"--output", a.output});
  if (a.no_lint) args.push_back("--no-lint");
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(python.c_str(), argv.data());
  usage_error(fmt::format("cannot run {}: {}. `kerncap report` needs Python 3 with matplotlib (pip install "
                          "'kerncap[report]'); name the interpreter with --python or {}",
                          python, std::strerror(errno), format::env_name(format::Var::Python)));
}

}  // namespace

void add_report(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "Write one self-contained HTML page about a capture or a regime set");
  cmd->footer(
      "The page (default OUT/report.html; no network at view time, no script): the regime table (shape,\n"
      "launches, share of the kernel's GPU time, verdict, strength, speed-up), bars of each regime's share and\n"
      "speed-up with the weighted figure, the captured image's and the candidate's kernel times (median and\n"
      "standard deviation), the footprint as each region's read and written share, and `kerncap lint` per\n"
      "regime. Verdicts and speed-ups come from --verdict: what `kerncap validate OUT [--cubin V] --json`\n"
      "printed. Written by `python3 -m kerncap.report` (matplotlib; pip install 'kerncap[report]').\n"
      "Example: kerncap validate iso/norm --cubin v.cubin --json > v.json; kerncap report iso/norm --verdict v.json");
  cmd->add_option("out", a->out, "A capture's OUT, or a regime set (extract --regimes)")->required();
  cmd->add_option("--verdict", a->verdict, "What `kerncap validate OUT --json` printed (verdicts, speed-ups)")
      ->type_name("FILE");
  cmd->add_option("-o,--output", a->output, "The page (default OUT/report.html)");
  cmd->add_flag("--no-lint", a->no_lint, "Do not run `kerncap lint` on each regime");
  cmd->add_option("--python", a->python, "Python interpreter with matplotlib (default: $KERNCAP_PYTHON, else python3)");
  cmd->callback([a, &exit_code] {
    exit_code = 0;
    run_report(*a);
  });
}

}  // namespace kerncap::cli
