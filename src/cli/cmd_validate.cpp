// `kerncap validate`: replay once and compare with what the application's launch wrote.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "cli/strong.hpp"
#include "cli/serve_route.hpp"
#include "cli/validate_output.hpp"
#include "cli/validate_regimes.hpp"
#include "cli/validate_served.hpp"
#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "format/protocol.hpp"
#include "format/regime_kernels.hpp"
#include "format/regimes_index.hpp"
#include "format/window.hpp"
#include "replay/eval_session.hpp"
#include "replay/evaluate.hpp"
#include "replay/judge.hpp"

namespace kerncap::cli {
namespace {

struct ValidateArgs {
  replay::JudgeOverrides judge;  // every judging flag: the one judge reads them (judge.hpp)
  std::string dtype;
  std::optional<double> atol, rtol;
  std::optional<std::string> invariants;
  std::optional<double> min_speedup;
  std::string footprint = "auto";
  replay::TimingOptions timing{.warmup = 3, .iterations = 20};
  std::string speedup_cache = "auto";  // --speedup-cache
  std::string server;  // --server auto|off ("": KERNCAP_SERVE, else auto)
  std::string regime;  // --regime DIR: one regime of a regime set (what validate_regimes runs)
};

// The judge's options as kc_evaluate and a `kerncap serve` read them: untimed unless a
// speed-up is asked for, the speed-up's launches, and every judging flag.
nlohmann::json judge_options(const ValidateArgs& a) {
  replay::JudgeOverrides j = a.judge;
  if (!a.dtype.empty()) j.dtype = a.dtype;
  j.atol = a.atol;
  j.rtol = a.rtol;
  j.invariants = a.invariants;
  j.min_speedup = a.min_speedup;
  nlohmann::json o = j.to_json();
  o["time"] = false;
  o["warmup"] = a.timing.warmup;
  o["iterations"] = a.timing.iterations;
  o["cache"] = a.speedup_cache;
  o["keep_loaded"] = true;
  return o;
}

// What a validation asks for, as far as a `kerncap serve` must honour it (serve_route.hpp).
ValidateShape shape_of(const ReplayCommon& c, const ValidateArgs& a, const nlohmann::json& options) {
  ValidateShape v;
  v.geometry = !c.grid.empty() || !c.block.empty();
  v.no_relocate = c.no_relocate;
  v.collide = c.collide >= 0;
  v.verify = c.verify;
  if (c.device >= 0) v.device = c.device;
  v.footprint = footprint_use_from(a.footprint);
  v.fuzz = a.judge.fuzz;
  v.options = options;
  return v;
}

void run_validate(const ReplayCommon& given, const ValidateArgs& a, int& exit_code) {
  ReplayCommon c0 = given;
  if (!a.regime.empty()) {
    c0.dir = regime_dir(c0.dir, a.regime).string();
  } else if (format::has_regime_kernels(c0.dir)) {
    // Several kernels' regime sets (extract --regimes --kernel A --kernel B / --top N).
    exit_code = validate_regime_kernels(c0.dir, !c0.cubin.empty(), a.min_speedup, c0.json, c0.quiet);
    return;
  } else if (format::has_regimes(c0.dir)) {
    // A regime set (extract --regimes): every regime judged in its own child.
    exit_code = validate_regimes(c0.dir, !c0.cubin.empty(), a.min_speedup, c0.json, c0.quiet);
    return;
  }
  const ReplayCommon c = with_fresh_variant(c0, "validating");
  const bool chatty = !c.quiet && !c.json;
  const nlohmann::json options = judge_options(a);
  // The policy resolved here first: a malformed OUT/kerncap.toml or a bad flag is bad input
  // (exit 2), refused before any GPU work and before a server is asked.
  // The capture, opened once (the strict reader) and handed down: the policy, the server's
  // route, the footprint, the session and the printer all read this one.
  const auto opened = std::make_shared<const format::Capture>(format::open_capture(c.dir));
  const format::Capture& cap = *opened;
  if (format::is_window_capture(cap.dir))  // its AFTER is the window's, not its first launch's
    usage_error(c.dir + " holds a window of launches: validate it with `kerncap window validate " + c.dir + "`");
  const replay::EvaluateOptions eo = replay::evaluate_options_from_json(options, cap);
  if (a.min_speedup && c.cubin.empty())
    usage_error("--min-speedup compares a variant with the captured image: give --cubin V (or build the "
                "reproducer's variant)");
  if (a.judge.fuzz && c.cubin.empty() && c.grid.empty() && c.block.empty() && chatty)
    std::fprintf(stderr, "kerncap: note: --fuzz without a variant compares the captured image with itself\n");
  const std::filesystem::path toml_file = replay::kerncap_toml_path(cap);
  std::error_code ec;
  const std::optional<std::string> toml =
      std::filesystem::exists(toml_file, ec) ? std::optional(toml_file.string()) : std::nullopt;
  const ServerUse use = server_use_from(a.server, format::serve_from_env());
  if (validate_served(c, cap, shape_of(c, a, options), use, toml, exit_code)) return;

  const auto fp = footprint_for(cap, c.dir, footprint_use_from(a.footprint), c.quiet || c.json);
  if (a.judge.fuzz && !fp)
    usage_error("--fuzz needs the launch's footprint (which inputs are read-only, which outputs are written): run "
                "`kerncap footprint " + c.dir + "` first (it needs the Compute Sanitizer API)");
  replay::Options session = c.options();
  session.opened = opened;
  const replay::JudgedOnce r = replay::judge_once(session, fp ? &*fp : nullptr, eo);
  ValidateOutput out = output_from_evaluation(r.evaluation.to_json(), r.device_line, placement_json(r.placement));
  if (chatty && !r.evaluation.speedup_note.empty())
    std::fprintf(stderr, "kerncap: note: %s\n", r.evaluation.speedup_note.c_str());
  print_validate(out, cap, c.json, toml);
  exit_code = out.pass ? 0 : 1;
}

}  // namespace

void add_validate(CLI::App& app, int& exit_code) {
  auto c = std::make_shared<ReplayCommon>();
  auto a = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand("validate", "Replay once and compare with the application's own output");
  cmd->footer("Every captured region is compared with what the application's launch left in it (BEFORE with\n"
              "the AFTER bytes applied). Prints failing regions and a final 'Result: PASS (...)' or\n"
              "'Result: FAIL (...)'. Exit code 0 on PASS, 1 on FAIL.\n\n"
              "Strong validation (with a footprint, see `kerncap footprint`): every byte the launch writes without\n"
              "reading it first is poisoned before the replay, so a replay that skips writes fails even where the\n"
              "application's launch rewrote equal bytes. Without a footprint the result says 'weak'.\n\n"
              "A variant (--cubin, or the reproducer's fresh one) is compared within tolerance where the kernel's\n"
              "signature types a region (fp32/fp16/bf16/fp64 pointers: max abs/rel error in the line), byte for byte\n"
              "elsewhere; --exact asks for bytes everywhere. The captured image's own replay is compared byte-exact.\n\n"
              "When the comparison fails and no --dtype/--atol/--rtol was given, the captured image is replayed twice:\n"
              "regions where the two replays differ belong to a nondeterministic kernel (float atomics, reordered\n"
              "reductions) and are compared again as the element types of the kernel's pointer parameters with\n"
              "their default tolerance widened by the kernel's own spread; the result line says so.\n\n"
              "OUT/kerncap.toml, when present, is read (a malformed file is refused with its line, exit 2):\n"
              "[tolerances] replace the default tolerance per dtype, [invariants] check the bytes the launch wrote\n"
              "(no_nan, no_inf, non_negative as their element types; must_write: the replay changes every region the\n"
              "application's launch changed), [timing] min_speedup times a variant against the captured image.\n"
              "Flags override the file (--invariant, --no-invariants, --min-speedup, --dtype/--atol/--rtol).\n"
              "The same judge (src/replay/judge.hpp) answers `kerncap serve`, `kerncap-replay --validate`, Python's\n"
              "Session.evaluate and the C ABI: one verdict document (--json) from every entry point. A variant that\n"
              "faults is a FAIL naming the fault. See docs/replay.md.\n\n"
              "A regime set (OUT from `kerncap extract KERNEL --regimes`): the judge runs on every regime, each in its\n"
              "own process, and times the variant against the captured image on each; the result names every failing\n"
              "regime and gives the speed-up weighted by each regime's share of the kernel's GPU time and its\n"
              "projection onto the application's GPU time; --min-speedup applies to the weighted figure.\n"
              "Several kernels' sets (OUT from `extract --regimes --kernel A --kernel B` or `--top N`): every\n"
              "kernel's captured image on every regime; a variant is judged on its own kernel's set, OUT/KK-<name>.\n\n"
              "Default tolerances (a variant's typed regions; --dtype without --atol/--rtol): fp64 1e-12/1e-12, fp32 atol 1e-6\nrtol 1e-5, fp16 1e-3, bf16 1e-2, fp8e4m3 0.125, fp8e5m2 0.25; integers and bytes exact.");
  add_replay_common(cmd, c);
  cmd->add_flag("--exact", a->judge.exact,
                "Compare a variant byte for byte (default: the regions the kernel's signature types are compared "
                "within their dtype's tolerance, as kerncap.toml [tolerances] or the default table sets it)");
  cmd->add_option("--dtype", a->dtype,
                  "Compare every byte as this element type (bytes, fp32, fp16, bf16, ...); default: OUT/compare.json's "
                  "typed spans when the reproducer has one, else byte-exact");
  cmd->add_option("--atol", a->atol, "Absolute tolerance (default: the dtype's entry in the default table)");
  cmd->add_option("--rtol", a->rtol, "Relative tolerance (default: the dtype's entry in the default table)");
  cmd->add_option("--footprint", a->footprint,
                  "auto: strong validation with the capture's footprint, measured once now if missing (needs the "
                  "Compute Sanitizer API); never: weak; require: fail without one")
      ->default_val("auto");
  cmd->add_option("--fuzz", a->judge.fuzz,
                  "Also run N trials with random float inputs (zeros, large, denormal values): the variant must match "
                  "the captured kernel within tolerance and write every byte it writes (needs a footprint)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{100000}));
  cmd->add_option("--seed", a->judge.seed, "Seed of the --fuzz inputs (a failure names the trial; same seed, same inputs)")
      ->default_val(1);
  cmd->add_option("--invariant", a->invariants,
                  "Check these invariants of the written bytes, comma-separated: no_nan, no_inf, non_negative, "
                  "must_write (replaces OUT/kerncap.toml [invariants])");
  cmd->add_flag("--no-invariants", a->judge.no_invariants, "Check no invariant, whatever OUT/kerncap.toml says");
  cmd->add_option("--tolerance", a->judge.tolerances,
                  "Per-region tolerance REGION:atol=A,rtol=B[,dtype=T] (repeatable; REGION is the id validate "
                  "prints); without dtype= each typed piece of the region keeps its type");
  cmd->add_option("--min-speedup", a->min_speedup,
                  "Time the captured image and the variant (CUDA events, medians) and FAIL when the variant is not at "
                  "least this much faster (1.1 = 10% faster); replaces OUT/kerncap.toml [timing] min_speedup");
  cmd->add_flag("--speedup", a->judge.speedup,
                "Time the variant against the captured image as --min-speedup does, without a threshold (the "
                "speed-up is reported; a regime set's children use it for the weighted figure)");
  cmd->add_option("--speedup-cache", a->speedup_cache,
                  "The L2 state both images are timed in for the speed-up: auto (default: warm or cold, whichever "
                  "replays the captured image nearer the application's own time of it, when the capture has that "
                  "time), blend (each image timed warm and cold and taken where the application's state lies "
                  "between them; docs/engine.md; the default of a regime set's weighted figure), warm or cold")
      ->check(CLI::IsMember({"auto", "blend", "warm", "cold"}));
  cmd->add_option("--speedup-iterations", a->timing.iterations, "Timed launches of each image for the speed-up")
      ->default_val(20);
  cmd->add_flag("--no-determinism-check", a->judge.no_determinism,
                "On a mismatch, do not replay the captured image twice to find out whether it is nondeterministic");
  cmd->add_option("--server", a->server,
                  "auto: when `kerncap serve DIR` is running, it evaluates (the same verdict, printed the same, "
                  "without starting a process's CUDA and restoring the capture; says `evaluated by kerncap serve`), "
                  "else this process does; off: always this process (default: KERNCAP_SERVE, else auto)");
  cmd->add_option("--regime", a->regime,
                  "Of a regime set (OUT/regimes.json, from `extract --regimes`): judge only this regime's capture "
                  "(its directory name); without it every regime is judged, each in its own process")
      ->type_name("DIR");
  cmd->callback([c, a, &exit_code] { run_validate(*c, *a, exit_code); });
}

}  // namespace kerncap::cli
