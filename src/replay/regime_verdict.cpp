#include "replay/regime_verdict.hpp"

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "format/out_layout.hpp"
#include "format/regime_kernels.hpp"

namespace kerncap::replay {

RegimeOutcome regime_outcome(const format::RegimeEntry& e, nlohmann::json doc, const std::string& no_verdict_why) {
  RegimeOutcome o{e, nullptr, "", std::nullopt};
  if (!doc.is_object() || !doc.contains("result") || !doc["result"].is_string()) {
    o.error = no_verdict_why;
    return o;
  }
  if (const auto s = doc.find("speedup"); s != doc.end() && s->is_object())
    if (const auto v = s->find("speedup"); v != s->end() && v->is_number())
      o.speedup = v->get<double>();
  o.verdict = std::move(doc);
  return o;
}

double regime_time_with(const format::RegimeEntry& e, const RegimeOutcome& o) {
  const double time = static_cast<double>(e.time_ns);
  double c = 0, v = 0;
  if (o.verdict.is_object() && o.verdict.contains("speedup") && o.verdict["speedup"].is_object()) {
    const nlohmann::json& sp = o.verdict["speedup"];
    c = sp.value("captured_median_ms", 0.0) * 1e6;
    v = sp.value("variant_median_ms", 0.0) * 1e6;
  }
  if (!(c > 0 && v > 0) || e.launches == 0) return time / *o.speedup;  // no medians: the ratio alone
  const double n = static_cast<double>(e.launches), mean = time / n;
  // No slower in the application than in the replay: the ratio (clock, cache: what scales
  // both images). Slower: the replay's per-launch difference, the excess left as it was.
  return mean <= c ? time * v / c : time + n * (v - c);
}

nlohmann::json regime_verdict(const format::RegimesIndex& idx, const std::vector<RegimeOutcome>& outcomes,
                              std::optional<double> min_speedup, bool variant) {
  nlohmann::json regimes = nlohmann::json::array();
  std::vector<std::string> failed, regressed, unjudged;
  double old_ns = 0, new_ns = 0, ratio_new_ns = 0, timed_share = 0;
  bool all_timed = true;
  for (const RegimeOutcome& o : outcomes) {
    const format::RegimeEntry& e = o.regime;
    nlohmann::json r = {{"dir", e.dir},
                        {"grid", {e.grid[0], e.grid[1], e.grid[2]}},
                        {"block", {e.block[0], e.block[1], e.block[2]}},
                        {"dynamic_shared", e.dynamic_shared},
                        {"launches", e.launches},
                        {"time_ns", e.time_ns},
                        {"share", e.share}};
    std::string result = "FAIL";
    if (o.verdict.is_object()) {
      result = o.verdict.value("result", "FAIL");
      r["strength"] = o.verdict.value("strength", "");
      r["line"] = o.verdict.value("line", "");
      r["verdict"] = o.verdict;
    } else {
      r["line"] = o.error;
      unjudged.push_back(e.dir);
    }
    r["result"] = result;
    if (result != "PASS") failed.push_back(e.dir);
    if (o.speedup) {
      r["speedup"] = *o.speedup;
      if (*o.speedup < 1) regressed.push_back(e.dir);
      if (*o.speedup > 0) {
        old_ns += static_cast<double>(e.time_ns);
        new_ns += regime_time_with(e, o);
        ratio_new_ns += static_cast<double>(e.time_ns) / *o.speedup;
        timed_share += e.share;
      } else {
        all_timed = false;  // never a weighted figure over part of the regimes without saying so
      }
    } else {
      r["speedup"] = nullptr;
      all_timed = false;
    }
    regimes.push_back(std::move(r));
  }
  nlohmann::json doc = {{"format", kRegimeVerdictFormat},
                        {"version", kRegimeVerdictVersion},
                        {"kernel", idx.demangled},
                        {"regimes", std::move(regimes)},
                        {"coverage", idx.coverage()},
                        {"failed", failed},
                        {"regressed", regressed},
                        {"min_speedup", min_speedup ? nlohmann::json(*min_speedup) : nlohmann::json(nullptr)}};
  std::optional<double> weighted;
  if (variant && all_timed && new_ns > 0) {
    weighted = old_ns / new_ns;
    doc["weighted_speedup"] = *weighted;
    doc["weighted_speedup_ratio"] = ratio_new_ns > 0 ? nlohmann::json(old_ns / ratio_new_ns) : nlohmann::json(nullptr);
    // Amdahl over the application's GPU time in the profiled run: the regimes' time shrinks
    // by their speed-ups, the rest of the kernel (regimes not captured) and every other
    // kernel stay as they were.
    const double app = static_cast<double>(idx.app_time_ns);
    if (app > 0) doc["app_projection"] = app / (app - old_ns + new_ns);
  } else {
    doc["weighted_speedup"] = nullptr;
    doc["weighted_speedup_ratio"] = nullptr;
    doc["app_projection"] = nullptr;
  }
  doc["timed_share"] = timed_share;

  std::string line;
  const size_t n = outcomes.size();
  if (!failed.empty()) {
    line = fmt::format("Result: FAIL ({} of {} regime(s) fail: {})", failed.size(), n, fmt::join(failed, ", "));
  } else if (min_speedup && !weighted) {
    line = fmt::format("Result: FAIL (--min-speedup {:.3f} asked for, but the weighted speed-up could not be measured "
                       "on every regime)",
                       *min_speedup);
  } else if (min_speedup && *weighted < *min_speedup) {
    line = fmt::format("Result: FAIL (all {} regime(s) pass, but the weighted speed-up x{:.3f} is below the x{:.3f} "
                       "required)",
                       n, *weighted, *min_speedup);
  } else {
    line = fmt::format("Result: PASS ({} of {} regime(s) pass, covering {:.1f}% of the kernel's GPU time", n, n,
                       100 * idx.coverage());
    if (weighted) line += fmt::format("; weighted speed-up x{:.3f}", *weighted);
    if (!regressed.empty()) line += fmt::format("; slower on {}", fmt::join(regressed, ", "));
    line += ")";
  }
  doc["result"] = failed.empty() && !(min_speedup && (!weighted || *weighted < *min_speedup)) ? "PASS" : "FAIL";
  doc["line"] = line;
  return doc;
}


nlohmann::json regime_verdict_from_json(const format::RegimesIndex& idx, const nlohmann::json& outcomes,
                                        const nlohmann::json& options) {
  if (!outcomes.is_array()) input_error("kc_regime_verdict: the outcomes must be a JSON array of {\"dir\", \"verdict\", \"error\"}");
  if (!options.is_object()) input_error("kc_regime_verdict: the options must be a JSON object");
  for (const auto& [k, v] : options.items())
    if (k != "min_speedup" && k != "variant")
      input_error(fmt::format("kc_regime_verdict: unknown option \"{}\" (options: min_speedup, variant)", k));
  std::optional<double> min_speedup;
  if (const auto m = options.find("min_speedup"); m != options.end() && !m->is_null()) {
    if (!m->is_number() || !(m->get<double>() > 0))
      input_error("kc_regime_verdict: min_speedup must be a positive number or null");
    min_speedup = m->get<double>();
  }
  bool variant = true;
  if (const auto v = options.find("variant"); v != options.end()) {
    if (!v->is_boolean()) input_error("kc_regime_verdict: variant must be true or false");
    variant = v->get<bool>();
  }
  std::set<std::string> seen;
  std::vector<RegimeOutcome> out;
  for (const nlohmann::json& o : outcomes) {
    if (!o.is_object() || !o.contains("dir") || !o["dir"].is_string())
      input_error("kc_regime_verdict: each outcome must be an object with a string \"dir\"");
    const std::string dir = o["dir"].get<std::string>();
    const format::RegimeEntry* entry = nullptr;
    for (const auto& e : idx.regimes)
      if (e.dir == dir) entry = &e;
    if (!entry) input_error(fmt::format("kc_regime_verdict: the set lists no regime {}", dir));
    if (!entry->captured) input_error(fmt::format("kc_regime_verdict: regime {} was not captured ({})", dir, entry->why));
    if (!seen.insert(dir).second) input_error(fmt::format("kc_regime_verdict: regime {} given twice", dir));
    std::string why = "no verdict";
    if (const auto err = o.find("error"); err != o.end() && err->is_string() && !err->get<std::string>().empty())
      why = err->get<std::string>();
    out.push_back(regime_outcome(*entry, o.value("verdict", nlohmann::json(nullptr)), why));
  }
  // The set's order, whatever order the outcomes came in: the document is the same however
  // the regimes were spread.
  std::vector<RegimeOutcome> ordered;
  for (const auto& e : idx.regimes) {
    if (!e.captured) continue;
    if (!seen.count(e.dir)) input_error(fmt::format("kc_regime_verdict: no outcome for regime {}", e.dir));
    for (auto& o : out)
      if (o.regime.dir == e.dir) ordered.push_back(std::move(o));
  }
  if (ordered.empty()) input_error("kc_regime_verdict: the set has no captured regime");
  return regime_verdict(idx, ordered, min_speedup, variant);
}

nlohmann::json regime_judging() {
  return {{"speedup", true}, {"cache", kRegimeSpeedupCache}, {"min_speedup", "weighted"}};
}

nlohmann::json regime_set_json(const std::filesystem::path& out) {
  if (format::has_regime_kernels(out)) {
    std::string dirs;
    const format::RegimeKernels listing = format::read_regime_kernels(out);
    for (const auto& k : listing.kernels) dirs += fmt::format("\n  {}  {}", (out / k.dir).string(), k.demangled);
    usage_error(fmt::format("{} holds the regime sets of {} kernels; a candidate is judged on the set of its own "
                            "kernel: give that set's directory{}",
                            out.string(), listing.kernels.size(), dirs));
  }
  const format::RegimesIndex idx = format::read_regimes(out);
  nlohmann::json j = format::to_json(idx);
  j["judging"] = regime_judging();
  size_t captured = 0;
  for (size_t i = 0; i < idx.regimes.size(); ++i) {
    if (!idx.regimes[i].captured) continue;
    ++captured;
    j["regimes"][i]["path"] = format::index_subdir(out, idx.regimes[i].dir, "regime").string();
  }
  if (captured == 0)
    input_error(fmt::format("{}: no regime of this set was captured, so there is nothing to judge (extract it again: "
                            "`kerncap extract KERNEL --regimes`)",
                            (out / std::string(format::out::kRegimesIndex)).string()));
  return j;
}

}  // namespace kerncap::replay
