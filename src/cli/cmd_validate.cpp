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
#include "cli/validate_served.hpp"
#include "cli/validate_settings.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "format/capture_dir.hpp"
#include "format/protocol.hpp"
#include "lint/kerncap_toml.hpp"
#include "replay/compare_spec.hpp"
#include "replay/fuzz.hpp"
#include "replay/speedup.hpp"
#include "replay/validate.hpp"
#include "replay/validate_flow.hpp"

namespace kerncap::cli {
namespace {

struct ValidateArgs {
  std::string dtype;
  std::optional<double> atol, rtol;
  bool no_determinism = false;
  std::string footprint = "auto";
  uint64_t fuzz = 0;
  uint64_t seed = 1;
  ValidateFlags flags;  // kerncap.toml overrides
  replay::TimingOptions timing{.warmup = 3, .iterations = 20};
  std::string server;  // --server auto|off ("": KERNCAP_SERVE, else auto)
};

// OUT/kerncap.toml's path (OUT may be given as OUT/capture).
std::string toml_path(const std::string& dir) {
  std::filesystem::path d = dir;
  if (d.filename() == format::kCaptureDirName) d = d.parent_path();
  return (d / lint::kKerncapTomlName).string();
}

// Flags force a spec; without any, the engine's default (OUT/compare.json or byte-exact).
std::optional<replay::CompareSpec> forced_spec(const ValidateArgs& a, const replay::ToleranceTable& table) {
  if (a.dtype.empty() && !a.atol && !a.rtol) return std::nullopt;
  const std::string name = a.dtype.empty() ? "bytes" : a.dtype;
  auto dtype = compare::dtype_from_string(name);
  if (!dtype) usage_error(fmt::format("--dtype {}: unknown type (bytes, fp32, fp16, bf16, fp64, i32...)", name));
  replay::CompareSpec spec;
  spec.dtype = *dtype;
  spec.tol = replay::resolve_tolerance(*dtype, a.atol, a.rtol, table);
  spec.source = "command line";
  return spec;
}

// What a validation asks for, as far as a `kerncap serve` must honour it (serve_route.hpp).
ValidateShape shape_of(const ReplayCommon& c, const ValidateArgs& a, const ValidateSettings& set, double min_speedup,
                       const std::optional<replay::CompareSpec>& spec) {
  ValidateShape v;
  v.geometry = !c.grid.empty() || !c.block.empty();
  v.no_relocate = c.no_relocate;
  v.collide = c.collide >= 0;
  v.verify = c.verify;
  v.no_determinism = a.no_determinism;
  v.invariants = set.invariants.any();
  v.tolerance_table = replay::changes_defaults(set.tolerances);  // the default kerncap.toml lists the defaults
  v.region_tolerances = !set.region_tolerances.empty();
  v.min_speedup = min_speedup;
  if (c.device >= 0) v.device = c.device;
  v.footprint = footprint_use_from(a.footprint);
  v.spec = spec;
  v.fuzz = a.fuzz;
  v.seed = a.seed;
  return v;
}

void run_validate(const ReplayCommon& c0, const ValidateArgs& a, int& exit_code) {
  // A malformed OUT/kerncap.toml is bad input (exit 2), refused before any GPU work.
  const auto config = lint::load_kerncap_toml(c0.dir);
  const ValidateSettings set = resolve_validate_settings(a.flags, config, toml_path(c0.dir));
  const ServerUse use = server_use_from(a.server, format::serve_from_env());
  const ReplayCommon c = with_fresh_variant(c0, "validating");
  replay::ValidateRequest req;
  req.session = c.options();
  req.spec = forced_spec(a, set.tolerances);
  req.check_determinism = !a.no_determinism;
  req.invariants = set.invariants;
  req.tolerances = set.tolerances;
  req.region_tolerances = set.region_tolerances;
  const bool chatty = !c.quiet && !c.json;
  double min_speedup = set.min_speedup.value_or(0);  // 0: no speed-up asked for
  if (min_speedup > 0 && !req.session.cubin) {
    if (a.flags.min_speedup)
      usage_error("--min-speedup compares a variant with the captured image: give --cubin V (or build the "
                  "reproducer's variant)");
    if (chatty)
      std::fprintf(stderr, "kerncap: note: min_speedup in %s not checked: no variant to time against the captured "
                   "image\n", set.min_speedup_from.c_str());
    min_speedup = 0;
  }
  if (a.fuzz && !req.session.overrides_launch() && chatty)
    std::fprintf(stderr, "kerncap: note: --fuzz without a variant compares the captured image with itself\n");
  const std::optional<std::string> toml = config ? std::optional(toml_path(c.dir)) : std::nullopt;
  if (validate_served(c, shape_of(c, a, set, min_speedup, req.spec), use, toml, exit_code)) return;

  const auto fp = footprint_for(c.dir, footprint_use_from(a.footprint), c.quiet || c.json);
  if (fp) req.footprint = &*fp;
  if (a.fuzz && !fp)
    usage_error("--fuzz needs the launch's footprint (which inputs are read-only, which outputs are written): run "
                "`kerncap footprint " + c.dir + "` first (it needs the Compute Sanitizer API)");
  const replay::ValidateReport r = replay::validate(req);
  const replay::Verdict& v = r.verdict;
  std::optional<replay::FuzzReport> fz;
  if (a.fuzz) fz = replay::fuzz(req.session.as_captured(), req.session, *fp, a.fuzz, a.seed);
  std::optional<replay::SpeedupCheck> sp;
  if (min_speedup > 0) {
    replay::Options captured = req.session;
    captured.cubin.reset();
    captured.progress = false;
    replay::Options variant = req.session;
    variant.progress = false;
    sp = replay::measure_speedup(captured, variant, a.timing, min_speedup);
  }
  // The verdict's line, turned into a FAIL when the fuzz trials or the speed-up fail.
  std::string extra;
  if (fz && !fz->pass()) extra = "fuzz trials failed";
  if (sp && !sp->pass())
    extra += fmt::format("{}speed-up x{:.3f} below the x{:.3f} required", extra.empty() ? "" : "; ", sp->speedup,
                         sp->min_speedup);
  ValidateOutput out;
  out.verdict = v.to_json();
  out.kernel = r.kernel;
  out.image = r.image;
  out.device_line = r.device;
  out.device = r.device_ordinal;
  out.placement = r.placement;
  out.rewritten_words = r.restore.rewritten_words;
  out.restore_work = {{"seconds", r.restore.seconds},
                      {"copied_bytes", r.restore.copied},
                      {"memset_bytes", r.restore.filled},
                      {"overlaid_bytes", r.restore.overlaid}};
  out.determinism_checked = r.determinism_checked;
  if (fz) {
    out.fuzz = fz->to_json();
    out.fuzz_line = fz->line();
  }
  if (sp) {
    out.speedup = sp->to_json();
    out.speedup_line = sp->line(a.timing.iterations) + " [from " + set.min_speedup_from + "]";
  }
  out.invariants_from = set.invariants_from;
  out.line = replay::fail_line(v.line(), extra);
  out.pass = v.pass() && (!fz || fz->pass()) && (!sp || sp->pass());
  print_validate(out, c.dir, c.json, toml);
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
              "When the comparison fails and no --dtype/--atol/--rtol was given, the captured image is replayed twice:\n"
              "regions where the two replays differ belong to a nondeterministic kernel (float atomics, reordered\n"
              "reductions) and are compared again as the element types of the kernel's pointer parameters with\n"
              "their default tolerance; the result line says so.\n\nOUT/kerncap.toml, when present, is read (a malformed file is refused with its line, exit 2):\n[tolerances] replace the default tolerance per dtype, [invariants] check the bytes the launch wrote\n(no_nan, no_inf, non_negative as their element types; must_write: the replay changes every region the\napplication's launch changed), [timing] min_speedup times a variant against the captured image.\nFlags override the file (--invariant, --no-invariants, --min-speedup, --dtype/--atol/--rtol).\nSee docs/replay.md.\n\nDefault tolerances (when --dtype is given without --atol/--rtol): fp64 1e-12/1e-12, fp32 atol 1e-6\nrtol 1e-5, fp16 1e-3, bf16 1e-2, fp8e4m3 0.125, fp8e5m2 0.25; integers and bytes exact.");
  add_replay_common(cmd, c);
  cmd->add_option("--dtype", a->dtype,
                  "Compare every byte as this element type (bytes, fp32, fp16, bf16, ...); default: OUT/compare.json's "
                  "typed spans when the reproducer has one, else byte-exact");
  cmd->add_option("--atol", a->atol, "Absolute tolerance (default: the dtype's entry in the default table)");
  cmd->add_option("--rtol", a->rtol, "Relative tolerance (default: the dtype's entry in the default table)");
  cmd->add_option("--footprint", a->footprint,
                  "auto: strong validation with the capture's footprint, measured once now if missing (needs the "
                  "Compute Sanitizer API); never: weak; require: fail without one")
      ->default_val("auto");
  cmd->add_option("--fuzz", a->fuzz,
                  "Also run N trials with random float inputs (zeros, large, denormal values): the variant must match "
                  "the captured kernel within tolerance and write every byte it writes (needs a footprint)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{100000}));
  cmd->add_option("--seed", a->seed, "Seed of the --fuzz inputs (a failure names the trial; same seed, same inputs)")
      ->default_val(1);
  cmd->add_option("--invariant", a->flags.invariants,
                  "Check these invariants of the written bytes, comma-separated: no_nan, no_inf, non_negative, "
                  "must_write (replaces OUT/kerncap.toml [invariants])");
  cmd->add_flag("--no-invariants", a->flags.no_invariants, "Check no invariant, whatever OUT/kerncap.toml says");
  cmd->add_option("--tolerance", a->flags.tolerances,
                  "Per-region tolerance REGION:atol=A,rtol=B[,dtype=T] (repeatable; REGION is the id validate "
                  "prints); without dtype= each typed piece of the region keeps its type");
  cmd->add_option("--min-speedup", a->flags.min_speedup,
                  "Time the captured image and the variant (CUDA events, medians) and FAIL when the variant is not at "
                  "least this much faster (1.1 = 10% faster); replaces OUT/kerncap.toml [timing] min_speedup");
  cmd->add_option("--speedup-iterations", a->timing.iterations, "Timed launches of each image for the speed-up")
      ->default_val(20);
  cmd->add_flag("--no-determinism-check", a->no_determinism,
                "On a mismatch, do not replay the captured image twice to find out whether it is nondeterministic");
  cmd->add_option("--server", a->server,
                  "auto: when `kerncap serve DIR` is running, it evaluates (the same verdict, printed the same, "
                  "without starting a process's CUDA and restoring the capture; says `evaluated by kerncap serve`), "
                  "else this process does; off: always this process (default: KERNCAP_SERVE, else auto)");
  cmd->callback([c, a, &exit_code] { run_validate(*c, *a, exit_code); });
}

}  // namespace kerncap::cli
