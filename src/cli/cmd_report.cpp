// `kerncap report OUT`: one self-contained HTML page about a capture or a regime set. The page
// is written by Python (python/kerncap/report.py: matplotlib SVG charts); this command finds
// the interpreter and the package and replaces itself with `python3 -m kerncap.report ARGS`
// (python_module.hpp).
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/python_module.hpp"

namespace kerncap::cli {

namespace {

struct ReportArgs {
  std::string out, verdict, output, python;
  bool no_lint = false;
};

PythonModule report_module(const ReportArgs& a) {
  std::vector<std::string> args = {a.out};
  if (!a.verdict.empty()) args.insert(args.end(), {"--verdict", a.verdict});
  if (!a.output.empty()) args.insert(args.end(), {"--output", a.output});
  if (a.no_lint) args.push_back("--no-lint");
  return {"kerncap.report", args, a.python, "matplotlib (pip install 'kerncap[report]')"};
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
    exec_python_module(report_module(*a));
  });
}

}  // namespace kerncap::cli
