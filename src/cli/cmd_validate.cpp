// `kerncap validate`: replay once and compare with what the application's launch wrote.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "replay/validate.hpp"

namespace kerncap::cli {
namespace {

struct ValidateArgs {
  std::string dtype = "bytes";
  double atol = 0, rtol = 0;
};

void run_validate(const ReplayCommon& c, const ValidateArgs& a, int& exit_code) {
  auto dtype = compare::dtype_from_string(a.dtype);
  if (!dtype) usage_error(fmt::format("--dtype {}: unknown type (bytes, fp32, fp16, bf16, fp64, i32...)", a.dtype));
  replay::Session s(with_fresh_variant(c, "validating").options());
  auto rs = s.restore();
  s.launch();
  replay::Verdict v = replay::compare_with_after(s, *dtype, {a.atol, a.rtol, true});
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
              "'Result: FAIL (...)'. Exit code 0 on PASS, 1 on FAIL.");
  add_replay_common(cmd, c);
  cmd->add_option("--dtype", a->dtype, "Compare as this element type (bytes, fp32, fp16, bf16, ...)")->default_val("bytes");
  cmd->add_option("--atol", a->atol, "Absolute tolerance for --dtype floats")->default_val(0);
  cmd->add_option("--rtol", a->rtol, "Relative tolerance for --dtype floats")->default_val(0);
  cmd->callback([c, a, &exit_code] { run_validate(*c, *a, exit_code); });
}

}  // namespace kerncap::cli
