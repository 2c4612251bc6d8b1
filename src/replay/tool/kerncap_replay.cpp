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
#include "replay/validate.hpp"
#include "replay/validate_flow.hpp"

namespace {

int run(const std::string& dir, const std::string& cubin, bool validate, const kerncap::replay::TimingOptions& t,
        bool json) {
  using namespace kerncap::replay;
  Options o;
  o.capture = dir;
  if (!cubin.empty()) o.cubin = cubin;
  o.progress = !json;
  if (json) kerncap::log::set_level(kerncap::log::Level::Quiet);
  check(t);
  nlohmann::json out;
  int code = 0;
  if (validate) {  // its own session: a failing comparison may replay the captured image twice
    ValidateReport r = kerncap::replay::validate({.session = o});
    out["validate"] = r.verdict.to_json();
    code = r.verdict.pass() ? 0 : 1;
    if (!json) std::cout << r.verdict.line() << "\n";
  }
  Session s(o);
  s.restore();
  out["kernel"] = s.capture().manifest.demangled_name;
  out["image"] = s.image_description();
  Timing timing = time_launches(s, t);
  out["timing"] = timing.to_json();
  if (json)
    std::cout << out.dump(2) << std::endl;
  else
    std::cout << fmt::format("{}: median {:.4f} ms, min {:.4f} ms, max {:.4f} ms over {} launches\n",
                             s.capture().manifest.demangled_name, timing.stats.median, timing.stats.min,
                             timing.stats.max, t.iterations);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Replay (and optionally validate) one kerncap capture with the replay engine alone"};
  std::string dir, cubin;
  bool validate = false, json = false;
  kerncap::replay::TimingOptions t;
  app.add_option("dir", dir, "Reproducer directory (OUT) or its capture/ folder")->required();
  app.add_option("--cubin", cubin, "Load this image instead of the captured one");
  app.add_flag("--validate", validate, "Compare with the application's result first (exit 1 on FAIL)");
  app.add_option("-n,--iterations", t.iterations, "Timed launches")->default_val(20);
  app.add_option("--warmup", t.warmup, "Untimed launches first")->default_val(3);
  app.add_flag("--restore-each", t.restore_each, "Restore memory before every launch");
  app.add_flag("--json", json, "One JSON object on stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return run(dir, cubin, validate, t, json);
  } catch (const kerncap::Error& e) {
    std::cerr << "kerncap-replay: error: " << e.what() << "\n";
    return kerncap::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "kerncap-replay: internal error: " << e.what() << "\n";
    return 70;
  }
}
