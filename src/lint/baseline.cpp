// Baseline files and the regression rules of `kerncap diff`.
#include "common/private_files.hpp"
#include "lint/baseline.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "format/capture_dir.hpp"

namespace kerncap::lint {

namespace {

namespace fs = std::filesystem;

fs::path out_of(const fs::path& dir) {
  return dir.filename() == format::kCaptureDirName ? dir.parent_path() : dir;
}

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key)) input_error(fmt::format("{}: missing \"{}\"; save the baseline again", source, key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    input_error(fmt::format("{}: \"{}\" has the wrong type; save the baseline again", source, key));
  }
}

template <typename T>
std::optional<T> optional_field(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return field<T>(j, key, source);
}

// A "more is worse" integer row; unknown (-1 / absent) values are only shown.
DiffRow count_row(const std::string& metric, std::optional<int64_t> b, std::optional<int64_t> c) {
  DiffRow r{metric, b ? std::to_string(*b) : "-", c ? std::to_string(*c) : "-", "", Change::Info};
  if (!b || !c) return r;
  r.delta = *c == *b ? "" : fmt::format("{:+}", *c - *b);
  r.change = *c == *b ? Change::Same : *c > *b ? Change::Worse : Change::Better;
  return r;
}

std::optional<int64_t> known(int v) { return v < 0 ? std::nullopt : std::optional<int64_t>(v); }

}  // namespace

nlohmann::json to_json(const Baseline& b) {
  auto opt = [](const auto& o) { return o ? nlohmann::json(*o) : nlohmann::json(nullptr); };
  nlohmann::json fuzz = nullptr, inv = nullptr;
  if (b.fuzz)
    fuzz = {{"pass", b.fuzz->pass}, {"trials", b.fuzz->trials}, {"seed", b.fuzz->seed},
            {"failed_trials", b.fuzz->failed_trials}, {"first_failure", b.fuzz->first_failure}};
  if (b.invariants)
    inv = {{"pass", b.invariants->pass}, {"checked", b.invariants->checked}, {"violations", b.invariants->violations}};
  return {{"format", "kerncap-baseline"},
          {"version", kBaselineVersion},
          {"name", b.name},
          {"created", b.created},
          {"tool_version", b.tool_version},
          {"kernel", b.kernel},
          {"image", b.image},
          {"image_xxh64", b.image_xxh64},
          {"gpu", b.gpu},
          {"sm", b.sm},
          {"driver_version", b.driver_version},
          {"time_ms",
           {{"median", b.median_ms}, {"min", b.min_ms}, {"max", b.max_ms}, {"stddev", b.stddev_ms},
            {"iterations", b.iterations}, {"warmup", b.warmup}}},
          {"resources",
           {{"registers", b.registers}, {"local_bytes", b.local_bytes}, {"shared_static_bytes", b.shared_static_bytes},
            {"spill_instructions", opt(b.spill_instructions)}, {"occupancy", opt(b.occupancy)}}},
          {"validation",
           {{"pass", b.validation_pass}, {"max_abs_error", b.max_abs_error}, {"max_rel_error", b.max_rel_error},
            {"failing_regions", b.failing_regions}}},
          {"fuzz", fuzz},
          {"invariants", inv}};
}

Baseline baseline_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || j.value("format", "") != "kerncap-baseline")
    input_error(fmt::format("{}: not a kerncap baseline", source));
  const int v = field<int>(j, "version", source);
  if (v > kBaselineVersion)
    input_error(fmt::format("{}: baseline version {} is newer than this kerncap reads ({}); upgrade kerncap", source,
                            v, kBaselineVersion));
  Baseline b;
  b.name = field<std::string>(j, "name", source);
  b.created = field<std::string>(j, "created", source);
  b.tool_version = field<std::string>(j, "tool_version", source);
  b.kernel = field<std::string>(j, "kernel", source);
  b.image = field<std::string>(j, "image", source);
  b.image_xxh64 = field<std::string>(j, "image_xxh64", source);
  b.gpu = field<std::string>(j, "gpu", source);
  b.sm = field<int>(j, "sm", source);
  b.driver_version = field<int>(j, "driver_version", source);
  const auto t = field<nlohmann::json>(j, "time_ms", source);
  b.median_ms = field<double>(t, "median", source);
  b.min_ms = field<double>(t, "min", source);
  b.max_ms = field<double>(t, "max", source);
  b.stddev_ms = field<double>(t, "stddev", source);
  b.iterations = field<int>(t, "iterations", source);
  b.warmup = field<int>(t, "warmup", source);
  const auto r = field<nlohmann::json>(j, "resources", source);
  b.registers = field<int>(r, "registers", source);
  b.local_bytes = field<int>(r, "local_bytes", source);
  b.shared_static_bytes = field<int>(r, "shared_static_bytes", source);
  b.spill_instructions = optional_field<int64_t>(r, "spill_instructions", source);
  b.occupancy = optional_field<double>(r, "occupancy", source);
  const auto val = field<nlohmann::json>(j, "validation", source);
  b.validation_pass = field<bool>(val, "pass", source);
  b.max_abs_error = field<double>(val, "max_abs_error", source);
  b.max_rel_error = field<double>(val, "max_rel_error", source);
  b.failing_regions = field<uint64_t>(val, "failing_regions", source);
  // Added after version 1 was first written: absent or null in older files.
  if (const auto f = optional_field<nlohmann::json>(j, "fuzz", source)) {
    b.fuzz.emplace();
    b.fuzz->pass = field<bool>(*f, "pass", source);
    b.fuzz->trials = field<uint64_t>(*f, "trials", source);
    b.fuzz->seed = field<uint64_t>(*f, "seed", source);
    b.fuzz->failed_trials = field<uint64_t>(*f, "failed_trials", source);
    b.fuzz->first_failure = field<std::string>(*f, "first_failure", source);
  }
  if (const auto i = optional_field<nlohmann::json>(j, "invariants", source)) {
    b.invariants.emplace();
    b.invariants->pass = field<bool>(*i, "pass", source);
    b.invariants->checked = field<std::string>(*i, "checked", source);
    b.invariants->violations = field<std::vector<std::string>>(*i, "violations", source);
  }
  return b;
}

fs::path baseline_path(const fs::path& out_dir, const std::string& name) {
  const bool ok = !name.empty() && name.size() <= 100 && name[0] != '.' &&
                  std::all_of(name.begin(), name.end(), [](char ch) {
                    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_';
                  });
  if (!ok) usage_error(fmt::format("baseline name \"{}\": use letters, digits, '.', '-' and '_'", name));
  return out_of(out_dir) / "baselines" / (name + ".json");
}

void save_baseline(const fs::path& out_dir, const Baseline& b) {
  const fs::path p = baseline_path(out_dir, b.name);
  files::create_private_dirs(p.parent_path());
  files::replace_file(p, to_json(b).dump(1) + "\n");
}

Baseline load_baseline(const fs::path& out_dir, const std::string& name) {
  const fs::path p = baseline_path(out_dir, name);
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    std::vector<std::string> have;
    for (const auto& e : fs::directory_iterator(p.parent_path(), ec))
      if (e.path().extension() == ".json") have.push_back(e.path().stem().string());
    std::sort(have.begin(), have.end());
    input_error(fmt::format("no baseline \"{}\" in {} ({}); save one with `kerncap baseline save {} {}`", name,
                            p.parent_path().string(),
                            have.empty() ? std::string("none saved") : "have: " + fmt::format("{}", fmt::join(have, ", ")),
                            name, out_of(out_dir).string()));
  }
  nlohmann::json j;
  try {
    std::ifstream in(p);
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    input_error(fmt::format("{}: not valid JSON ({})", p.string(), e.what()));
  }
  return baseline_from_json(j, p.string());
}

const char* to_string(Change c) {
  switch (c) {
    case Change::Same: return "same";
    case Change::Better: return "better";
    case Change::Worse: return "WORSE";
    default: return "info";
  }
}

bool DiffReport::regression() const {
  return std::any_of(rows.begin(), rows.end(), [](const DiffRow& r) { return r.change == Change::Worse; });
}

DiffReport diff(const Baseline& b, const Baseline& c, const DiffThresholds& t) {
  DiffReport d;
  d.speedup = c.median_ms > 0 ? b.median_ms / c.median_ms : 0;
  DiffRow time{"time (median)", fmt::format("{:.4f} ms +- {:.4f}", b.median_ms, b.stddev_ms),
               fmt::format("{:.4f} ms +- {:.4f}", c.median_ms, c.stddev_ms),
               fmt::format("{:+.1f}% (x{:.3f} speed-up)", b.median_ms > 0 ? 100 * (c.median_ms / b.median_ms - 1) : 0,
                           d.speedup),
               Change::Same};
  const double threshold = std::max(t.time_rel * b.median_ms,
                                    t.noise_sigmas * std::sqrt(b.stddev_ms * b.stddev_ms + c.stddev_ms * c.stddev_ms));
  if (b.gpu != c.gpu || b.sm != c.sm) {
    time.change = Change::Info;
    time.delta += fmt::format("; not compared: measured on {} (sm_{}) and {} (sm_{})", b.gpu, b.sm, c.gpu, c.sm);
  } else if (c.median_ms - b.median_ms > threshold) {
    time.change = Change::Worse;
  } else if (b.median_ms - c.median_ms > threshold) {
    time.change = Change::Better;
  }
  if (time.change == Change::Same) time.delta += fmt::format(" within noise ({:.4f} ms)", threshold);
  d.rows.push_back(std::move(time));

  d.rows.push_back(count_row("registers", known(b.registers), known(c.registers)));
  d.rows.push_back(count_row("spills (STL+LDL)", b.spill_instructions, c.spill_instructions));
  d.rows.push_back(count_row("local memory (B)", known(b.local_bytes), known(c.local_bytes)));

  DiffRow occ{"occupancy", b.occupancy ? fmt::format("{:.0f}%", *b.occupancy * 100) : "-",
              c.occupancy ? fmt::format("{:.0f}%", *c.occupancy * 100) : "-", "", Change::Info};
  if (b.occupancy && c.occupancy) {
    const double dd = *c.occupancy - *b.occupancy;
    occ.change = std::abs(dd) < 1e-9 ? Change::Same : dd < 0 ? Change::Worse : Change::Better;
    if (occ.change != Change::Same) occ.delta = fmt::format("{:+.0f} points", dd * 100);
  }
  d.rows.push_back(std::move(occ));

  auto verdict = [](const Baseline& x) {
    return fmt::format("{} (max abs {:.3g}, rel {:.3g})", x.validation_pass ? "PASS" : "FAIL", x.max_abs_error,
                       x.max_rel_error);
  };
  DiffRow val{"validation", verdict(b), verdict(c), "", Change::Same};
  if (b.validation_pass && !c.validation_pass) val.change = Change::Worse;
  else if (!b.validation_pass && c.validation_pass) val.change = Change::Better;
  else if (!c.validation_pass && c.max_abs_error > b.max_abs_error) val.change = Change::Worse;  // failing further
  d.rows.push_back(std::move(val));

  // Fuzz and invariants: pass/fail rows, compared only when both sides have them.
  auto pass_row = [](const std::string& metric, std::optional<std::string> bt, std::optional<bool> bp,
                     std::optional<std::string> ct, std::optional<bool> cp) {
    DiffRow r{metric, bt.value_or("-"), ct.value_or("-"), "", Change::Info};
    if (!bp || !cp) {
      if (bp || cp) r.delta = bp ? "not measured now" : "not in the baseline";
      return r;
    }
    r.change = *bp == *cp ? Change::Same : *cp ? Change::Better : Change::Worse;
    return r;
  };
  auto fuzz_text = [](const Baseline& x) -> std::optional<std::string> {
    if (!x.fuzz) return std::nullopt;
    if (x.fuzz->pass) return fmt::format("PASS ({} trials, seed {})", x.fuzz->trials, x.fuzz->seed);
    return fmt::format("FAIL ({} of {} trials, seed {})", x.fuzz->failed_trials, x.fuzz->trials, x.fuzz->seed);
  };
  auto fuzz_pass = [](const Baseline& x) { return x.fuzz ? std::optional<bool>(x.fuzz->pass) : std::nullopt; };
  d.rows.push_back(pass_row("fuzz", fuzz_text(b), fuzz_pass(b), fuzz_text(c), fuzz_pass(c)));
  auto inv_text = [](const Baseline& x) -> std::optional<std::string> {
    if (!x.invariants) return std::nullopt;
    if (x.invariants->pass) return fmt::format("PASS ({})", x.invariants->checked);
    return fmt::format("FAIL ({} violation(s))", x.invariants->violations.size());
  };
  auto inv_pass = [](const Baseline& x) {
    return x.invariants ? std::optional<bool>(x.invariants->pass) : std::nullopt;
  };
  d.rows.push_back(pass_row("invariants", inv_text(b), inv_pass(b), inv_text(c), inv_pass(c)));

  DiffRow img{"image", b.image_xxh64, c.image_xxh64, b.image_xxh64 == c.image_xxh64 ? "same bytes" : "changed",
              Change::Info};
  d.rows.push_back(std::move(img));
  return d;
}

std::string result_line(const DiffReport& d) {
  return fmt::format("Result: {}", d.regression() ? "REGRESSION" : "NO REGRESSION");
}

std::string to_text(const DiffReport& d, const Baseline& b, const Baseline& c) {
  std::string s = fmt::format("baseline \"{}\" ({}, {}) vs now ({})\n", b.name, b.created, b.gpu, c.gpu);
  s += fmt::format("  {:<18} {:<28} {:<28} {:<7} {}\n", "metric", "baseline", "current", "", "change");
  for (const DiffRow& r : d.rows)
    s += fmt::format("  {:<18} {:<28} {:<28} {:<7} {}\n", r.metric, r.baseline, r.current, to_string(r.change), r.delta);
  s += result_line(d) + "\n";
  return s;
}

nlohmann::json to_json(const DiffReport& d) {
  nlohmann::json rows = nlohmann::json::array();
  for (const DiffRow& r : d.rows)
    rows.push_back({{"metric", r.metric}, {"baseline", r.baseline}, {"current", r.current}, {"delta", r.delta},
                    {"change", to_string(r.change)}});
  return {{"rows", rows}, {"speedup", d.speedup}, {"regression", d.regression()}, {"line", result_line(d)}};
}

}  // namespace kerncap::lint
