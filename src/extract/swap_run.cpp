#include "extract/swap_run.hpp"

#include <chrono>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/private_files.hpp"
#include "format/profile_records.hpp"
#include "format/protocol.hpp"
#include "profile/aggregate.hpp"

namespace kerncap::extract {
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxCheckOutput = 2000;  // bytes of the check's output kept per run
constexpr uint64_t kMaxOutputRead = 64ull << 20;

std::string read_text(const fs::path& p, uint64_t max = kMaxOutputRead) {
  std::ifstream in(p, std::ios::binary);
  std::string s;
  if (!in) return s;
  s.resize(max);
  in.read(s.data(), static_cast<std::streamsize>(max));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

std::string tail(const std::string& s, size_t n) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

// One run of the application: profile mode, the swaps applied or only counted.
RunArm run_once(const SwapRunOptions& o, size_t index, bool swapped) {
  RunArm arm;
  arm.index = index;
  arm.swapped = swapped;
  const fs::path dir = o.dir / fmt::format("run-{:03}-{}", index, swapped ? "swap" : "base");
  files::create_private_dirs(dir);
  const fs::path records = dir / "records";
  files::create_private_dirs(records);

  ProfiledRun how;
  how.verbose = o.verbose;
  how.sample = 0;  // every launch timed: the kernel's totals must be exact in both arms
  how.rank = o.rank;
  how.doing = "run";
  for (const auto& p : o.plans) {
    format::SwapSpec s = p.spec;
    s.apply = swapped && !o.shadow_every;
    if (swapped && o.shadow_every) {
      s.shadow_every = o.shadow_every;
      s.shadow_max_bytes = o.shadow_max_bytes;
    }
    how.swaps.push_back(std::move(s));
  }
  const AppOutput out{dir / "stdout.txt", dir / "stderr.txt"};
  how.output = &out;
  arm.stdout_file = out.stdout_file;
  const auto t0 = std::chrono::steady_clock::now();
  arm.exit = run_profiled(o.app, records, how);
  arm.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  try {
    const profile::Summary s = profile::aggregate(format::read_records(records));
    arm.gpu_ns = s.total_kernel_ns;
    for (const auto& k : s.kernels)
      for (const auto& p : o.plans)
        if (k.mangled == p.spec.kernel || k.mangled == p.spec.entry) {
          arm.kernel_ns += k.total_ns;
          break;
        }
    if (s.processes.empty()) arm.records_problem = "no process of the application wrote kernel records";
  } catch (const Error& e) {
    arm.records_problem = e.what();
  }
  try {
    for (const auto& rep : format::read_swap_reports(records))
      for (const auto& k : rep.kernels) {
        arm.launches += k.launches;
        arm.swapped_launches += k.swapped;
        arm.graph_nodes += k.graph_nodes;
        if (!k.refused.empty()) arm.refused.push_back(fmt::format("pid {}: {}", rep.pid, k.refused));
        arm.shadow_checked += k.shadow_checked;
        arm.shadow_skipped += k.shadow_skipped;
        arm.shadow_failed += k.shadow_failed;
        arm.shadow_seconds += k.shadow_seconds;
        if (arm.shadow_skip_reason.empty()) arm.shadow_skip_reason = k.shadow_skip_reason;
        if (arm.first_failure.is_null() && !k.first_failure.is_null()) {
          arm.first_failure = k.first_failure;
          arm.first_failure["pid"] = rep.pid;
          arm.first_failure["kernel"] = k.kernel;
        }
      }
  } catch (const Error& e) {
    arm.refused.push_back(std::string("the swap report cannot be read: ") + e.what());
  }

  if (!o.check.empty()) {
    std::map<std::string, std::string> check_env = {
        {std::string(format::env_name(format::Var::RunArm)), swapped ? "swap" : "base"},
        {std::string(format::env_name(format::Var::RunIndex)), std::to_string(index)},
        {std::string(format::env_name(format::Var::RunDir)), dir.string()},
        {std::string(format::env_name(format::Var::RunStdout)), out.stdout_file.string()},
    };
    AppOutput check_out{dir / "check.txt", dir / "check.txt"};
    const AppExit e = run_application({o.check}, true, check_env, &check_out);
    arm.check_status = e.exited ? e.code : 128 + e.code;
    arm.check_output = tail(read_text(dir / "check.txt", 1 << 20), kMaxCheckOutput);
  }
  return arm;
}

std::vector<double> values(const std::vector<RunArm>& runs, bool swapped, double RunArm::*field) {
  std::vector<double> v;
  for (const auto& r : runs)
    if (r.swapped == swapped && !r.warmup) v.push_back(r.*field);
  return v;
}
std::vector<double> values(const std::vector<RunArm>& runs, bool swapped, uint64_t RunArm::*field) {
  std::vector<double> v;
  for (const auto& r : runs)
    if (r.swapped == swapped && !r.warmup) v.push_back(static_cast<double>(r.*field));
  return v;
}

bool ok_exit(const AppExit& e) { return e.exited && e.code == 0; }

}  // namespace

std::string first_line_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (size_t line = 1;; ++line) {
    const bool ga = static_cast<bool>(std::getline(sa, la)), gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "";
    if (ga != gb)
      return fmt::format("line {}: {} (unmodified: {})", line, gb ? "'" + tail(lb, 200) + "'" : "the output ends",
                         ga ? "'" + tail(la, 200) + "'" : "it ends");
    if (la != lb) return fmt::format("line {}: '{}' (unmodified: '{}')", line, tail(lb, 200), tail(la, 200));
  }
}

void summarise(SwapRunResult& r, const std::vector<std::string>& outputs, bool has_check, bool shadow) {
  for (int s = 0; s < 2; ++s) {
    r.wall[s] = median_ci(values(r.runs, s == 1, &RunArm::wall_s));
    r.gpu[s] = median_ci(values(r.runs, s == 1, &RunArm::gpu_ns));
    r.kernel[s] = median_ci(values(r.runs, s == 1, &RunArm::kernel_ns));
  }
  r.wall_ratio = paired_ratio(values(r.runs, false, &RunArm::wall_s), values(r.runs, true, &RunArm::wall_s));
  r.gpu_ratio = paired_ratio(values(r.runs, false, &RunArm::gpu_ns), values(r.runs, true, &RunArm::gpu_ns));
  r.kernel_ratio =
      paired_ratio(values(r.runs, false, &RunArm::kernel_ns), values(r.runs, true, &RunArm::kernel_ns));

  // Outputs: each swapped run against the first unmodified one; the unmodified ones among
  // themselves, so that an application that prints times or addresses is not called wrong.
  const std::string* first_base = nullptr;
  for (size_t i = 0; i < r.runs.size() && i < outputs.size(); ++i) {
    if (r.runs[i].swapped) continue;
    if (!first_base) first_base = &outputs[i];
    else if (outputs[i] != *first_base) r.base_outputs_agree = false;
  }
  for (size_t i = 0; i < r.runs.size() && i < outputs.size() && first_base; ++i) {
    if (!r.runs[i].swapped || outputs[i] == *first_base) continue;
    if (r.outputs_identical) r.first_difference = fmt::format("run {}, {}", i, first_line_difference(*first_base, outputs[i]));
    r.outputs_identical = false;
  }
  for (const auto& a : r.runs)
    if (a.swapped && a.check_status) {
      ++r.checks_run;
      if (*a.check_status != 0) ++r.checks_failed;
    }

  bool base_ok = true, swap_ok = true, refused = false, all_swapped = true;
  uint64_t checked = 0;
  double check_seconds = 0;
  const RunArm* failed_check = nullptr;
  for (const auto& a : r.runs) {
    (a.swapped ? swap_ok : base_ok) &= ok_exit(a.exit);
    if (!a.swapped) continue;
    if (!a.refused.empty()) refused = true;
    if (a.launches == 0 && a.graph_nodes == 0) all_swapped = false;
    if (!shadow && a.swapped_launches < a.launches) all_swapped = false;
    checked += a.shadow_checked;
    check_seconds += a.shadow_seconds;
    if (!failed_check && a.shadow_failed) failed_check = &a;
  }
  if (checked) r.shadow_overhead_s = check_seconds / static_cast<double>(checked);
  if (shadow && failed_check) {
    const nlohmann::json& f = failed_check->first_failure;
    r.verdict = "shadow_failed";
    r.why = fmt::format("the variant differs from the original at launch {} of the kernel (grid {}, block {}, "
                        "parameter {}, {}) in run {}; {} of {} checked launches differ",
                        f.value("launch", uint64_t{0}), f.contains("grid") ? f["grid"].dump() : "?",
                        f.contains("block") ? f["block"].dump() : "?", f.value("param", -1),
                        f.value("summary", std::string("?")), failed_check->index, failed_check->shadow_failed,
                        failed_check->shadow_checked);
  } else if (shadow && !refused && checked == 0) {
    r.verdict = "not_checked";
    r.why = "no launch of the kernel was checked";
    for (const auto& a : r.runs)
      if (a.swapped && !a.shadow_skip_reason.empty()) {
        r.why += ": " + a.shadow_skip_reason;
        break;
      }
  } else if (refused) {
    r.verdict = "refused";
    for (const auto& a : r.runs)
      if (a.swapped && !a.refused.empty()) {
        r.why = "the variant was refused inside the application: " + a.refused.front();
        break;
      }
  } else if (!all_swapped) {
    r.verdict = "not_swapped";
    r.why = "some swapped run launched the kernel without the variant, or never launched it: the timings are not "
            "about the variant";
  } else if (base_ok && !swap_ok) {
    r.verdict = "app_failed";
    r.why = "the application failed with the variant and succeeded without it";
  } else if (has_check && r.checks_failed) {
    r.verdict = "check_failed";
    r.why = fmt::format("--check failed after {} of {} swapped runs", r.checks_failed, r.checks_run);
  } else if (!has_check && !r.outputs_identical && r.base_outputs_agree) {
    r.verdict = "output_differs";
    r.why = "the application printed something else with the variant: " + r.first_difference;
    // With one unmodified run there is nothing to tell an application that prints times or
    // addresses from a wrong result.
    size_t base_runs = 0;
    for (const auto& a : r.runs) base_runs += !a.swapped;
    if (base_runs < 2)
      r.why += " (with one unmodified run kerncap cannot tell whether the application prints something else every "
               "time, such as times or addresses: --repeat 2 shows it, --check judges the results)";
  } else {
    r.verdict = "ok";
    r.why = !base_ok ? "the application failed in both arms (its own failure, not the variant's)"
            : shadow ? fmt::format("the variant agreed with the original on all {} checked launches", checked)
            : has_check ? "the check passed after every swapped run"
            : r.base_outputs_agree ? "every swapped run printed what the unmodified run printed"
                                   : "the unmodified runs print different things each time, so their output decides "
                                     "nothing: give --check";
  }
}

SwapRunResult run_swapped(const SwapRunOptions& o, const RunProgress& progress) {
  if (o.plans.empty()) usage_error("give at least one --swap TARGET=IMAGE");
  if (o.pairs == 0) usage_error("--repeat must be at least 1");
  files::create_private_dirs(o.dir);
  SwapRunResult r;
  std::vector<std::string> outputs;
  const size_t total = 2 * (o.warmup_pairs + o.pairs);
  for (size_t i = 0; i < total; ++i) {
    // Alternating arms, unmodified first: drift (clocks, caches, other tenants) hits both.
    RunArm a = run_once(o, i, i % 2 == 1);
    a.warmup = i < 2 * o.warmup_pairs;
    outputs.push_back(read_text(a.stdout_file));
    if (progress) progress(a, total);
    r.runs.push_back(std::move(a));
  }
  summarise(r, outputs, !o.check.empty(), o.shadow_every > 0);
  return r;
}

namespace {
nlohmann::json ci_json(const MedianCI& c) {
  return {{"n", c.n}, {"median", c.median}, {"low", c.low}, {"high", c.high}, {"exact95", c.exact95}};
}
std::string ci_text(const MedianCI& c, double scale, const char* unit, int digits = 3) {
  if (!c.n) return "-";
  return fmt::format("{:.{}f}{} [{:.{}f}, {:.{}f}]{}", c.median * scale, digits, unit, c.low * scale, digits,
                     c.high * scale, digits, c.exact95 ? "" : "*");
}
}  // namespace

nlohmann::json run_report_json(const SwapRunOptions& o, const SwapRunResult& r) {
  nlohmann::json swaps = nlohmann::json::array();
  for (const auto& p : o.plans)
    swaps.push_back({{"target", p.target},
                     {"capture", p.capture},
                     {"kernel", p.spec.kernel},
                     {"demangled", p.demangled},
                     {"entry", p.spec.entry},
                     {"image", p.spec.image},
                     {"layout_checked", p.layout_checked},
                     {"compiled_from", p.compiled_from},
                     {"compile_verdict", p.compile_verdict}});
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& a : r.runs) {
    nlohmann::json j = {{"index", a.index},
                        {"arm", a.swapped ? "swap" : "base"},
                        {"warmup", a.warmup},
                        {"wall_s", a.wall_s},
                        {"exit", {{"exited", a.exit.exited}, {"code", a.exit.code}, {"text", a.exit.describe()}}},
                        {"gpu_ns", a.gpu_ns},
                        {"kernel_ns", a.kernel_ns},
                        {"launches", a.launches},
                        {"swapped_launches", a.swapped_launches},
                        {"graph_nodes", a.graph_nodes},
                        {"refused", a.refused},
                        {"stdout", a.stdout_file.string()}};
    if (!a.records_problem.empty()) j["records_problem"] = a.records_problem;
    if (a.swapped && o.shadow_every)
      j["shadow"] = {{"checked", a.shadow_checked}, {"skipped", a.shadow_skipped}, {"failed", a.shadow_failed},
                     {"skip_reason", a.shadow_skip_reason}, {"seconds", a.shadow_seconds},
                     {"first_failure", a.first_failure}};
    if (a.check_status) j["check"] = {{"status", *a.check_status}, {"output", a.check_output}};
    runs.push_back(std::move(j));
  }
  nlohmann::json summary = {
      {"wall_s", {{"base", ci_json(r.wall[0])}, {"swap", ci_json(r.wall[1])}, {"ratio", ci_json(r.wall_ratio)}}},
      {"gpu_ns", {{"base", ci_json(r.gpu[0])}, {"swap", ci_json(r.gpu[1])}, {"ratio", ci_json(r.gpu_ratio)}}},
      {"kernel_ns",
       {{"base", ci_json(r.kernel[0])}, {"swap", ci_json(r.kernel[1])}, {"ratio", ci_json(r.kernel_ratio)}}},
      {"base_outputs_agree", r.base_outputs_agree},
      {"outputs_identical", r.outputs_identical},
      {"first_difference", r.first_difference},
      {"checks_run", r.checks_run},
      {"checks_failed", r.checks_failed},
      {"shadow_overhead_s", r.shadow_overhead_s}};
  return {{"format", kRunReportFormat}, {"version", kRunReportVersion},
          {"command", o.app.as_argv()},  {"check", o.check},
          {"pairs", o.pairs},            {"warmup_pairs", o.warmup_pairs}, {"dir", o.dir.string()},
          {"mode", o.shadow_every ? "shadow" : "swap"}, {"shadow_every", o.shadow_every},
          {"swaps", swaps},              {"runs", runs},
          {"summary", summary},          {"verdict", r.verdict},
          {"why", r.why}};
}

std::string run_report_text(const SwapRunOptions& o, const SwapRunResult& r) {
  std::string s;
  for (const auto& p : o.plans) {
    s += fmt::format("swap {}\n  served by {} in {}\n  parameter layout: {}\n", p.demangled.empty() ? p.spec.kernel : p.demangled,
                     p.spec.entry, p.spec.image,
                     p.layout_checked ? "checked against the capture " + p.capture
                                      : "checked by the driver at the first launch");
    if (!p.compiled_from.empty())
      s += fmt::format("  compiled from {} by its reproducer; on the captured launch: {}\n", p.compiled_from,
                       p.compile_verdict.empty() ? "(no verdict printed)" : p.compile_verdict);
  }
  uint64_t launches = 0, swapped = 0, nodes = 0;
  for (const auto& a : r.runs)
    if (a.swapped) {
      launches = std::max(launches, a.launches);
      swapped = std::max(swapped, a.swapped_launches);
      nodes = std::max(nodes, a.graph_nodes);
    }
  if (o.shadow_every) {
    uint64_t checked = 0, skipped = 0, failed = 0;
    for (const auto& a : r.runs)
      if (a.swapped) checked += a.shadow_checked, skipped += a.shadow_skipped, failed += a.shadow_failed;
    s += fmt::format("shadow: every {} launch(es) of the kernel checked against the variant: {} checked, {} differ, {} "
                     "skipped; {:.3f} ms of checking per checked launch\n",
                     o.shadow_every, checked, failed, skipped, r.shadow_overhead_s * 1e3);
    for (const auto& a : r.runs)
      if (a.swapped && !a.shadow_skip_reason.empty()) {
        s += "  skipped because: " + a.shadow_skip_reason + "\n";
        break;
      }
    s += "\n";
  } else {
    s += fmt::format("launches of the kernel(s) per swapped run: {} host launches ({} served by the variant), {} graph "
                     "kernel nodes given the variant\n\n",
                     launches, swapped, nodes);
  }
  s += fmt::format("{} pair(s){}, unmodified then {}; median [95% interval]{}\n", o.pairs,
                   o.warmup_pairs ? fmt::format(" after {} warm-up pair(s)", o.warmup_pairs) : "",
                   o.shadow_every ? "shadow-checked" : "swapped",
                   r.wall[0].exact95 ? "" : " (* fewer than 6 runs per arm: the range, not a 95% interval)");
  s += fmt::format("  {:<22} {:<30} {:<30} {}\n", "", "unmodified", "swapped", "unmodified/swapped (paired)");
  s += fmt::format("  {:<22} {:<30} {:<30} {}\n", "wall time", ci_text(r.wall[0], 1, " s"), ci_text(r.wall[1], 1, " s"),
                   ci_text(r.wall_ratio, 1, "x"));
  s += fmt::format("  {:<22} {:<30} {:<30} {}\n", "GPU time (all kernels)", ci_text(r.gpu[0], 1e-6, " ms"),
                   ci_text(r.gpu[1], 1e-6, " ms"), ci_text(r.gpu_ratio, 1, "x"));
  s += fmt::format("  {:<22} {:<30} {:<30} {}\n", "the kernel's own time", ci_text(r.kernel[0], 1e-6, " ms"),
                   ci_text(r.kernel[1], 1e-6, " ms"), ci_text(r.kernel_ratio, 1, "x"));
  s += "\n";
  s += fmt::format("output: {}\n", r.outputs_identical ? "every swapped run printed what the unmodified run printed"
                                   : "differs: " + r.first_difference);
  if (!r.base_outputs_agree) s += "  (the unmodified runs differ among themselves too)\n";
  if (!o.check.empty()) s += fmt::format("check:  {} of {} swapped runs passed `{}`\n", r.checks_run - r.checks_failed, r.checks_run, o.check);
  for (const auto& a : r.runs) {
    if (!ok_exit(a.exit)) s += fmt::format("run {} ({}): the application {}\n", a.index, a.swapped ? "swapped" : "unmodified", a.exit.describe());
    if (!a.records_problem.empty()) s += fmt::format("run {}: {}\n", a.index, a.records_problem);
  }
  s += fmt::format("verdict: {} ({})\nruns kept in {}\n", r.verdict, r.why, o.dir.string());
  return s;
}

}  // namespace kerncap::extract
