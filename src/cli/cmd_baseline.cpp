// `kerncap baseline save` and `kerncap diff`: measure a reproducer (replay time, resources,
// validation against AFTER) and store it, or compare a new measurement with a stored one.
// The measuring needs the GPU; the file format and the regression rules are src/lint/baseline.*.
#include <chrono>
#include <ctime>
#include <iostream>

#include <fmt/format.h>
#include <xxhash.h>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "cli/strong.hpp"
#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "format/capture_dir.hpp"
#include "lint/baseline.hpp"
#include "lint/lint.hpp"
#include "format/kerncap_toml.hpp"
#include "replay/fuzz.hpp"
#include "replay/session.hpp"
#include "replay/timing.hpp"
#include "replay/eval_session.hpp"
#include "replay/evaluate.hpp"
#include "format/window.hpp"

namespace kerncap::cli {
namespace {

struct MeasureArgs {
  std::string dir, cubin;
  bool captured = false;  // the captured image even when a fresh variant exists
  bool json = false;
  replay::TimingOptions timing{.warmup = 3, .iterations = 50};
  uint64_t fuzz = 0;  // --fuzz N trials (needs a footprint)
  uint64_t seed = 1;
};

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Resources as lint reads them; the SASS (for spills) only where a disassembler exists.
void add_resources(lint::Baseline& b, const format::Capture& cap, const std::string& cubin) {
  lint::LintOptions o;
  o.cubin = cubin;
  lint::LintReport r;
  try {
    r = lint::lint(cap, o);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Usage) throw;
    o.sass = false;
    r = lint::lint(cap, o);
  }
  if (r.resources) {
    b.registers = r.resources->registers;
    b.local_bytes = std::max(r.resources->local_bytes, 0);
    b.shared_static_bytes = std::max(r.resources->shared_static_bytes, 0);
  }
  if (r.mix) b.spill_instructions = static_cast<int64_t>(r.mix->local_stores + r.mix->local_loads);
  if (r.occupancy) b.occupancy = r.occupancy->occupancy;
}

lint::Baseline measure(const MeasureArgs& a, const std::string& name) {
  format::refuse_window_capture(a.dir, "kerncap baseline", "Time it with `kerncap window replay " + a.dir + "`.");
  ReplayCommon rc;
  rc.dir = a.dir;
  rc.cubin = a.cubin;
  rc.baseline = a.captured;
  rc.quiet = a.json;
  rc = with_fresh_variant(rc, "measuring");
  replay::check(a.timing);
  // The one judge, as `validate` judges (OUT/kerncap.toml's tolerances and invariants; a
  // malformed file is refused here, before any GPU work); the speed-up is the baseline's own.
  replay::EvaluateOptions judge = replay::evaluate_options_from_json({{"time", false}}, format::open_capture(a.dir));
  judge.policy.min_speedup = 0;
  judge.policy.fuzz = a.fuzz;
  judge.policy.seed = a.seed;
  std::optional<format::Footprint> fp;
  if (a.fuzz) {
    fp = footprint_for(a.dir, FootprintUse::Auto, a.json);
    if (!fp)
      usage_error("--fuzz needs the launch's footprint: run `kerncap footprint " + a.dir +
                  "` first (it needs the Compute Sanitizer API)");
  }

  const format::Capture cap = format::open_capture(a.dir);
  lint::Baseline b;
  b.name = name;
  b.created = utc_now();
  b.tool_version = KERNCAP_VERSION;
  b.kernel = cap.manifest.mangled_name;
  b.image = rc.cubin.empty() ? cap.path(cap.manifest.image_file).string() : rc.cubin;
  const std::vector<uint8_t> bytes = rc.cubin.empty() ? cap.read_image() : format::read_file(b.image);
  b.image_xxh64 = hex_addr(XXH64(bytes.data(), bytes.size(), 0));
  add_resources(b, cap, rc.cubin);

  rc.quiet = true;  // progress lines would interleave with the report
  const replay::Options opt = rc.options();
  {
    replay::Session s(opt);
    s.restore();
    const replay::Timing t = replay::time_launches(s, a.timing);
    b.median_ms = t.stats.median;
    b.min_ms = t.stats.min;
    b.max_ms = t.stats.max;
    b.stddev_ms = t.stats.stddev;
    b.iterations = a.timing.iterations;
    b.warmup = a.timing.warmup;
    s.make_current();
    CUdevice dev = 0;
    KC_CU(cuCtxGetDevice(&dev));
    char gpu[256] = {};
    KC_CU(cuDeviceGetName(gpu, sizeof gpu, dev));
    b.gpu = gpu;
    int major = 0, minor = 0;
    KC_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    KC_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    b.sm = major * 10 + minor;
    KC_CU(cuDriverGetVersion(&b.driver_version));
  }
  // Strong when the capture has a footprint (the fuzz trials need one anyway).
  const auto stored = fp ? fp : replay::stored_footprint(opt, true);
  const replay::JudgedOnce jo = replay::judge_once(opt, stored ? &*stored : nullptr, judge);
  const replay::Verdict& verdict = jo.evaluation.verdict;
  b.validation_pass = verdict.fault.empty() && verdict.failing() == 0;  // invariants have their own row
  if (verdict.invariants) {
    b.invariants.emplace();
    b.invariants->pass = verdict.invariants->pass();
    b.invariants->checked = compare::to_string(verdict.invariants->checked);
    for (const auto& x : verdict.invariants->violations) b.invariants->violations.push_back(x.message);
  }
  if (const auto& fz = jo.evaluation.fuzz) {
    b.fuzz = lint::Baseline::Fuzz{fz->pass(), fz->trials, fz->seed, fz->failures.size(), fz->pass() ? "" : fz->line()};
  }
  for (const replay::RegionVerdict& r : verdict.regions) {
    b.max_abs_error = std::max(b.max_abs_error, r.result.max_abs_error);
    b.max_rel_error = std::max(b.max_rel_error, r.result.max_rel_error);
    if (!r.result.pass()) ++b.failing_regions;
  }
  return b;
}

void add_measure_options(CLI::App* cmd, MeasureArgs& a) {
  cmd->add_option("--cubin", a.cubin, "Measure this variant instead of the default choice (as validate)");
  cmd->add_flag("--captured", a.captured, "Measure the captured image even when the reproducer has a fresh variant");
  cmd->add_option("-n,--iterations", a.timing.iterations, "Timed launches")->default_val(50);
  cmd->add_option("--warmup", a.timing.warmup, "Untimed launches first")->default_val(3);
  cmd->add_option("--fuzz", a.fuzz,
                  "Also run N fuzz trials as `validate --fuzz N` (needs a footprint) and keep pass/fail, trials, seed")
      ->check(CLI::Range(uint64_t{0}, uint64_t{100000}));
  cmd->add_option("--seed", a.seed, "Seed of the --fuzz inputs")->default_val(1);
  cmd->add_flag("--json", a.json, "Print JSON");
}

}  // namespace

void add_baseline(CLI::App& app, int& exit_code) {
  auto* group = app.add_subcommand("baseline", "Store a reproducer's measurements for later `kerncap diff`");
  group->require_subcommand(1);
  auto a = std::make_shared<MeasureArgs>();
  auto name = std::make_shared<std::string>();
  auto* save = group->add_subcommand(
      "save", "Replay (time: median and spread), validate against AFTER, read resources; store OUT/baselines/NAME.json");
  save->add_option("name", *name, "Baseline name (letters, digits, '.', '-', '_')")->required();
  save->add_option("dir", a->dir, "Reproducer directory (OUT)")->required();
  add_measure_options(save, *a);
  save->callback([a, name, &exit_code] {
    lint::baseline_path(a->dir, *name);  // refuse a bad name before measuring
    const lint::Baseline b = measure(*a, *name);
    lint::save_baseline(a->dir, b);
    if (a->json) {
      std::cout << lint::to_json(b).dump(2) << std::endl;
    } else {
      std::cout << fmt::format("saved {}: {:.4f} ms median (+- {:.4f}) on {}, {} registers, validation {}{}{}\n",
                               lint::baseline_path(a->dir, *name).string(), b.median_ms, b.stddev_ms, b.gpu,
                               b.registers, b.validation_pass ? "PASS" : "FAIL",
                               b.invariants ? fmt::format(", invariants {}", b.invariants->pass ? "PASS" : "FAIL") : "",
                               b.fuzz ? fmt::format(", fuzz {} ({} trials)", b.fuzz->pass ? "PASS" : "FAIL",
                                                    b.fuzz->trials)
                                      : "");
    }
    exit_code = 0;
  });
}

void add_diff(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<MeasureArgs>();
  auto name = std::make_shared<std::string>();
  auto fail = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("diff", "Measure now and compare with a saved baseline (time, resources, error)");
  cmd->footer(
      "Time counts as changed only beyond max(3% of the baseline median, 3 x the combined standard deviation), and only\n"
      "on the same GPU. More registers, spills or local memory, lower occupancy, or a validation that now fails are\n"
      "regressions. With --fail-on-regression the exit status is 1 on a regression. See docs/lint.md.");
  cmd->add_option("dir", a->dir, "Reproducer directory (OUT)")->required();
  cmd->add_option("--baseline", *name, "The baseline saved by `kerncap baseline save NAME OUT`")->required();
  cmd->add_flag("--fail-on-regression", *fail, "Exit 1 when anything regressed");
  add_measure_options(cmd, *a);
  cmd->callback([a, name, fail, &exit_code] {
    const lint::Baseline base = lint::load_baseline(a->dir, *name);
    const lint::Baseline cur = measure(*a, "current");
    const lint::DiffReport d = lint::diff(base, cur);
    if (a->json) {
      nlohmann::json j = lint::to_json(d);
      j["baseline"] = lint::to_json(base);
      j["current"] = lint::to_json(cur);
      std::cout << j.dump(2) << std::endl;
    } else {
      std::cout << lint::to_text(d, base, cur) << std::flush;
    }
    exit_code = *fail && d.regression() ? 1 : 0;
  });
}

}  // namespace kerncap::cli
