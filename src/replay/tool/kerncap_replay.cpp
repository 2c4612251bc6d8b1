// kerncap-replay: the replay engine alone, for Makefiles and scripts that need no extract,
// profile or source tooling. `kerncap-replay OUT [--cubin V] [--validate] [-n N] [--json]`.
// Exit codes: 0 ok/PASS, 1 FAIL, 2 bad input, 3 device error, 70 internal error.
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/log.hpp"
#include "replay/compare_spec.hpp"
#include "replay/session.hpp"
#include "replay/timing.hpp"
#include "replay/timing_flags.hpp"
#include "replay/eval_session.hpp"
#include "replay/evaluate.hpp"
#include "replay/validate.hpp"

namespace {

struct Args {
  std::string dir, cubin;
  bool validate = false, json = false, verify = false;
  kerncap::replay::TimingFlags timing;
};

int run(const Args& a) {
  using namespace kerncap::replay;
  const auto& [dir, cubin, validate, json, verify, flags] = a;
  const TimingOptions t = flags.options();
  Options o;
  o.capture = dir;
  if (!cubin.empty()) o.cubin = cubin;
  o.progress = !json;
  o.verify_hashes = verify;
  if (json) kerncap::log::set_level(kerncap::log::Level::Quiet);
  nlohmann::json out;
  int code = 0;
  if (validate) {
    // The one judge, as `kerncap validate` (OUT/kerncap.toml, strong with a stored footprint;
    // this binary measures none), in its own session before the timing one.
    const auto fp = stored_footprint(o, true);
    const auto eo = evaluate_options_from_json({{"time", false}}, kerncap::format::open_capture(dir));
    const JudgedOnce r = judge_once(o, fp ? &*fp : nullptr, eo);
    out["validate"] = r.evaluation.to_json();
    code = r.evaluation.pass() ? 0 : 1;
    if (!json) {
      for (const auto& x : r.evaluation.verdict.regions)
        if (!x.result.pass()) std::cout << fmt::format("  region {} ({}): {}\n", x.id, x.kind, x.summary());
      std::cout << r.evaluation.line << "\n";
    }
    if (!r.evaluation.verdict.fault.empty()) {  // this process's CUDA may be unusable: no timing
      if (json) std::cout << out.dump(2) << std::endl;
      return code;
    }
  }
  Session s(o);
  s.restore();
  out["kernel"] = s.capture().manifest.demangled_name;
  out["image"] = s.image_description();
  Timing timing = time_launches(s, t);
  out["timing"] = timing.to_json();
  out.update(in_app_json(timing, in_app_of(s.capture().manifest)));
  if (json)
    std::cout << out.dump(2) << std::endl;
  else
    std::cout << fmt::format("{}: median {:.4f} ms, min {:.4f} ms, max {:.4f} ms, stddev {:.4f} ms over {} launches\n  {}\n",
                             s.capture().manifest.demangled_name, timing.stats.median, timing.stats.min,
                             timing.stats.max, timing.stats.stddev, t.iterations, timing.describe());
  if (const std::string line = in_app_line(timing, in_app_of(s.capture().manifest)); !json && !line.empty())
    std::cout << "  " << line << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Replay (and optionally validate) one kerncap capture with the replay engine alone"};
  Args a;
  app.add_option("dir", a.dir, "Reproducer directory (OUT) or its capture/ folder")->required();
  app.add_option("--cubin", a.cubin, "Load this image instead of the captured one");
  app.add_flag("--validate", a.validate,
               "Compare with the application's result first (OUT/compare.json's typed spans when the reproducer "
               "has one, else byte-exact; exit 1 on FAIL)");
  kerncap::replay::add_timing_flags(&app, a.timing);
  app.add_flag("--verify", a.verify, "Check the capture's files against the hashes recorded at capture");
  app.add_flag("--json", a.json, "One JSON object on stdout");
  app.footer(std::string(kerncap::replay::kTimingHelp) + "\n" + "Exit codes: 0 ok (PASS), 1 FAIL, 2 bad input or usage, 3 device error (no GPU, CUDA error, the\n"
             "kernel faulted), 70 internal error.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return run(a);
  } catch (const kerncap::Error& e) {
    std::cerr << "kerncap-replay: error: " << e.what() << "\n";
    return kerncap::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "kerncap-replay: internal error: " << e.what() << "\n";
    return 70;
  }
}
