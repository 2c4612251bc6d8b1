// `kerncap lint`: offline checks of the captured kernel's compiled code (no GPU).
#include <iostream>
#include <regex>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "format/kerncap_toml.hpp"
#include "lint/lint.hpp"
#include "format/window.hpp"

namespace kerncap::cli {
namespace {

struct LintArgs {
  std::string dir;
  std::string cubin;
  bool baseline = false;
  bool json = false;
  bool no_sass = false;
  bool init = false;
  std::string disassembler;
  std::optional<int64_t> max_registers, max_spills, max_local_memory;
  std::vector<std::string> require, forbid;
};

void check_regexes(const std::vector<std::string>& res, const char* flag) {
  for (const std::string& re : res) {
    try {
      std::regex check(re, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      usage_error(fmt::format("{} \"{}\": not a valid regular expression: {}", flag, re, e.what()));
    }
  }
}

void run_lint(const LintArgs& a, int& exit_code) {
  const std::filesystem::path out = a.dir;
  if (a.init) {
    const auto dir = format::resolve_capture_dir(out).parent_path();
    const bool wrote = format::write_default_kerncap_toml(dir);
    std::cout << fmt::format("{} {}\n", wrote ? "wrote" : "kept the existing", (dir / format::kKerncapTomlName).string());
    exit_code = 0;
    return;
  }
  ReplayCommon rc;
  rc.dir = a.dir;
  rc.cubin = a.cubin;
  rc.baseline = a.baseline;
  rc.quiet = a.json;
  rc = with_fresh_variant(rc, "linting");

  format::refuse_window_capture(out, "kerncap lint", "Validate it with `kerncap window validate " + a.dir + "`.");
  const format::Capture capture = format::open_capture(out);
  lint::LintOptions opt;
  opt.cubin = rc.cubin;
  opt.sass = !a.no_sass;
  opt.disassembler = a.disassembler;
  if (auto cfg = format::load_kerncap_toml(capture.dir.parent_path())) opt.checks = cfg->artifact_checks;
  // Flags override the file's limits and add to its patterns.
  if (a.max_registers) opt.checks.max_registers = a.max_registers;
  if (a.max_spills) opt.checks.max_spills = a.max_spills;
  if (a.max_local_memory) opt.checks.max_local_memory = a.max_local_memory;
  check_regexes(a.require, "--require");
  check_regexes(a.forbid, "--forbid");
  opt.checks.required_patterns.insert(opt.checks.required_patterns.end(), a.require.begin(), a.require.end());
  opt.checks.forbidden_patterns.insert(opt.checks.forbidden_patterns.end(), a.forbid.begin(), a.forbid.end());

  const lint::LintReport r = lint::lint(capture, opt);
  if (a.json)
    std::cout << lint::to_json(r).dump(2) << std::endl;
  else
    std::cout << lint::to_text(r) << std::flush;
  exit_code = r.passed() ? 0 : 1;
}

}  // namespace

void add_lint(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<LintArgs>();
  auto* cmd = app.add_subcommand(
      "lint",
      "Check the captured kernel's compiled code offline (no GPU): registers, spills, local and shared "
      "memory, barriers, theoretical occupancy of the captured launch, SASS instruction mix, and "
      "required/forbidden patterns over SASS and PTX. Limits and patterns come from OUT/kerncap.toml "
      "([artifact_checks]); flags override them. Prints one line per check and 'Result: PASS' or "
      "'Result: FAIL'; exits 0 on PASS, 1 on FAIL, 2 on bad input. SASS comes from nvdisasm or "
      "cuobjdump (PATH, then /usr/local/cuda/bin). See docs/lint.md.");
  cmd->add_option("dir", a->dir, "Reproducer directory (OUT) or its capture/ folder")->required();
  cmd->add_option("--cubin", a->cubin, "Check this variant (cubin, fatbin or PTX) instead of the default choice");
  cmd->add_flag("--baseline", a->baseline, "Check the captured image even when the reproducer has a fresh variant");
  cmd->add_flag("--json", a->json, "Print the report as JSON");
  cmd->add_flag("--no-sass", a->no_sass, "Do not disassemble: resources and occupancy only (no mix, spills, patterns over SASS)");
  cmd->add_option("--disassembler", a->disassembler, "nvdisasm or cuobjdump to run instead of searching for one");
  cmd->add_option("--max-registers", a->max_registers, "Fail above this many registers per thread");
  cmd->add_option("--max-spills", a->max_spills, "Fail above this many local memory instructions (STL+LDL) in the SASS");
  cmd->add_option("--max-local-memory", a->max_local_memory, "Fail above this many bytes of stack per thread");
  cmd->add_option("--require", a->require, "A regex that must match a SASS or PTX line (repeatable)");
  cmd->add_option("--forbid", a->forbid, "A regex that must match no SASS or PTX line (repeatable)");
  cmd->add_flag("--init", a->init, "Write the default OUT/kerncap.toml if there is none, and stop");
  cmd->callback([a, &exit_code] { run_lint(*a, exit_code); });
}

}  // namespace kerncap::cli
