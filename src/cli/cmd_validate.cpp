// `kerncap validate`: replay once and compare with what the application's launch wrote.
#include <cstdio>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "replay/compare_spec.hpp"
#include "replay/validate.hpp"

namespace kerncap::cli {
namespace {

struct ValidateArgs {
  std::string dtype;
  std::optional<double> atol, rtol;
};

// Flags win; without any, the reproducer's compare.json (when it has one) or byte-exact.
replay::CompareSpec spec_from(const ValidateArgs& a, const replay::Session& s) {
  if (a.dtype.empty() && !a.atol && !a.rtol) return replay::default_spec(s.capture().dir, s.capture().manifest);
  const std::string name = a.dtype.empty() ? "bytes" : a.dtype;
  auto dtype = compare::dtype_from_string(name);
  if (!dtype) usage_error(fmt::format("--dtype {}: unknown type (bytes, fp32, fp16, bf16, fp64, i32...)", name));
  replay::CompareSpec spec;
  spec.dtype = *dtype;
  spec.tol = replay::resolve_tolerance(*dtype, a.atol, a.rtol);
  spec.source = "command line";
  return spec;
}

void run_validate(const ReplayCommon& c, const ValidateArgs& a, int& exit_code) {
  replay::Session s(with_fresh_variant(c, "validating").options());
  const replay::CompareSpec spec = spec_from(a, s);
  if (spec.source != "default" && spec.source != "command line" && !c.quiet && !c.json)
    std::fprintf(stderr, "kerncap: comparing with the typed spans of %s\n", spec.source.c_str());
  auto rs = s.restore();
  s.launch();
  replay::Verdict v = replay::compare_with_after(s, spec);
  const auto& st = s.address_space().stats();
  if (c.json) {
    nlohmann::json j = v.to_json();
    j["kernel"] = s.capture().manifest.demangled_name;
    j["image"] = s.image_description();
    j["relocated_regions"] = st.runs_relocated;
    j["rewritten_words"] = rs.rewritten_words;
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << s.capture().manifest.demangled_name << "\n  image: " << s.image_description() << "\n  "
              << placement_line(s, rs.rewritten_words) << "\n";
    for (const auto& r : v.regions) {
      if (r.result.pass()) continue;
      std::cout << fmt::format("  region {} ({} at {}, {}; launch wrote {}): {}\n", r.id, r.kind, hex_addr(r.base),
                               human_bytes(r.size), human_bytes(r.written), compare::summary(r.result));
    }
    std::cout << v.line() << "\n";
  }
  exit_code = v.pass() ? 0 : 1;
}

}  // namespace

void add_validate(CLI::App& app, int& exit_code) {
  auto c = std::make_shared<ReplayCommon>();
  auto a = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand("validate", "Replay once and compare with the application's own output");
  cmd->footer("Every captured region is compared with what the application's launch left in it (BEFORE with\n"
              "the AFTER bytes applied). Prints failing regions and a final 'Result: PASS (...)' or\n"
              "'Result: FAIL (...)'. Exit code 0 on PASS, 1 on FAIL.\n\nDefault tolerances (when --dtype is given without --atol/--rtol): fp64 1e-12/1e-12, fp32 atol 1e-6\nrtol 1e-5, fp16 1e-3, bf16 1e-2, fp8e4m3 0.125, fp8e5m2 0.25; integers and bytes exact.");
  add_replay_common(cmd, c);
  cmd->add_option("--dtype", a->dtype,
                  "Compare every byte as this element type (bytes, fp32, fp16, bf16, ...); default: OUT/compare.json's "
                  "typed spans when the reproducer has one, else byte-exact");
  cmd->add_option("--atol", a->atol, "Absolute tolerance (default: the dtype's entry in the default table)");
  cmd->add_option("--rtol", a->rtol, "Relative tolerance (default: the dtype's entry in the default table)");
  cmd->callback([c, a, &exit_code] { run_validate(*c, *a, exit_code); });
}

}  // namespace kerncap::cli
