#include "replay/judge.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/error.hpp"
#include "replay/determinism.hpp"

namespace kerncap::replay {
using nlohmann::json;

namespace {

template <typename T>
std::optional<T> get(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    input_error(fmt::format("judge option \"{}\" has the wrong type", key));
  }
}

// --dtype/--atol/--rtol as one spec (bytes when only tolerances are given).
std::optional<CompareSpec> spec_from_flags(const JudgeOverrides& o, const ToleranceTable& table) {
  if (!o.dtype && !o.atol && !o.rtol) return std::nullopt;
  const std::string name = o.dtype.value_or("bytes");
  const auto dtype = compare::dtype_from_string(name);
  if (!dtype) usage_error(fmt::format("--dtype {}: unknown type (bytes, fp32, fp16, bf16, fp64, i32...)", name));
  CompareSpec spec;
  spec.dtype = *dtype;
  spec.tol = resolve_tolerance(*dtype, o.atol, o.rtol, table);
  spec.source = "command line";
  return spec;
}

// "signature types", "sass types", "signature and sass types": where the spans a spec gained
// took their element types from, for its source line.
std::string types_from(const std::vector<TypedSpan>& before, const std::vector<TypedSpan>& after) {
  std::vector<std::string> from;
  for (const TypedSpan& t : after) {
    const bool old = std::any_of(before.begin(), before.end(), [&](const TypedSpan& b) {
      return b.base == t.base && b.size == t.size && b.source == t.source;
    });
    if (!old && !t.source.empty() && std::find(from.begin(), from.end(), t.source) == from.end()) from.push_back(t.source);
  }
  if (from.empty()) return "signature types";
  std::string s;
  for (size_t i = 0; i < from.size(); ++i) s += (i == 0 ? "" : i + 1 == from.size() ? " and " : ", ") + from[i];
  return s + " types";
}

std::vector<uint32_t> all_region_ids(const format::Manifest& m) {
  std::vector<uint32_t> ids;
  for (const auto& r : m.regions) ids.push_back(r.id);
  return ids;
}

}  // namespace

json JudgeOverrides::to_json() const {
  json j = json::object();
  if (dtype) j["dtype"] = *dtype;
  if (atol) j["atol"] = *atol;
  if (rtol) j["rtol"] = *rtol;
  if (spec) j["spec"] = *spec;
  if (exact) j["exact"] = true;
  if (no_determinism) j["check_determinism"] = false;
  if (invariants) j["invariants"] = *invariants;
  if (no_invariants) j["no_invariants"] = true;
  if (!tolerances.empty()) j["tolerance"] = tolerances;
  if (min_speedup) j["min_speedup"] = *min_speedup;
  if (speedup) j["speedup"] = true;
  if (fuzz) j["fuzz"] = fuzz;
  if (seed != 1) j["seed"] = seed;
  return j;
}

JudgeOverrides JudgeOverrides::from_json(const json& j) {
  if (!j.is_object()) input_error("the judge's options must be a JSON object");
  JudgeOverrides o;
  o.dtype = get<std::string>(j, "dtype");
  o.atol = get<double>(j, "atol");
  o.rtol = get<double>(j, "rtol");
  if (j.contains("spec") && !j["spec"].is_null()) o.spec = j["spec"];
  o.exact = get<bool>(j, "exact").value_or(false);
  o.no_determinism = !get<bool>(j, "check_determinism").value_or(true);
  o.invariants = get<std::string>(j, "invariants");
  o.no_invariants = get<bool>(j, "no_invariants").value_or(false);
  o.tolerances = get<std::vector<std::string>>(j, "tolerance").value_or(std::vector<std::string>{});
  o.min_speedup = get<double>(j, "min_speedup");
  o.speedup = get<bool>(j, "speedup").value_or(false);
  const int64_t fuzz = get<int64_t>(j, "fuzz").value_or(0);
  if (fuzz < 0 || fuzz > 100000) usage_error(fmt::format("fuzz: {} trials (0 to 100000)", fuzz));
  o.fuzz = static_cast<uint64_t>(fuzz);
  o.seed = get<uint64_t>(j, "seed").value_or(1);
  return o;
}

json JudgePolicy::to_json() const {
  json tol = json::object();
  for (const auto& [dtype, t] : tolerances) tol[compare::to_string(dtype)] = {{"atol", t.atol}, {"rtol", t.rtol}};
  json regions = json::array();
  for (const auto& r : region_tolerances) {
    json x = {{"region", r.region}};
    if (r.dtype) x["dtype"] = compare::to_string(*r.dtype);
    if (r.atol) x["atol"] = *r.atol;
    if (r.rtol) x["rtol"] = *r.rtol;
    regions.push_back(x);
  }
  return {{"forced_spec", forced ? json(forced->source) : json(nullptr)},
          {"exact", exact},
          {"check_determinism", check_determinism},
          {"tolerances", tol},
          {"tolerances_from", tolerances_from},
          {"region_tolerances", regions},
          {"invariants", compare::to_string(invariants)},
          {"invariants_from", invariants_from},
          {"min_speedup", min_speedup},
          {"min_speedup_from", min_speedup_from},
          {"measure_speedup", measure_speedup},
          {"fuzz", fuzz},
          {"seed", seed}};
}

JudgePolicy resolve_policy(const JudgeOverrides& o, const std::optional<format::KerncapConfig>& config,
                           const std::string& source, const format::Manifest& m) {
  JudgePolicy p;
  if (o.invariants && o.no_invariants) usage_error("--invariant and --no-invariants contradict each other");
  if (o.spec && (o.dtype || o.atol || o.rtol)) usage_error("a comparison spec and --dtype/--atol/--rtol: give one");
  if (config) {
    p.tolerances = config->tolerances;
    if (!p.tolerances.empty()) p.tolerances_from = source;
    p.invariants = {.no_nan = config->invariants.no_nan,
                    .no_inf = config->invariants.no_inf,
                    .non_negative = config->invariants.non_negative,
                    .must_write = config->invariants.must_write};
    if (p.invariants.any()) p.invariants_from = source;
    if (config->timing.min_speedup) {
      p.min_speedup = *config->timing.min_speedup;
      p.min_speedup_from = source;
    }
  }
  if (o.invariants) {
    p.invariants = compare::parse_invariant_list(*o.invariants);
    p.invariants_from = "--invariant";
  }
  if (o.no_invariants) {
    p.invariants = {};
    p.invariants_from = "--no-invariants";
  }
  for (const std::string& t : o.tolerances) p.region_tolerances.push_back(parse_region_tolerance(t));
  if (o.min_speedup) {
    if (!(*o.min_speedup > 0) || !std::isfinite(*o.min_speedup))
      usage_error(fmt::format("--min-speedup {}: expected a number > 0 (1.1 = at least 10% faster)", *o.min_speedup));
    p.min_speedup = *o.min_speedup;
    p.min_speedup_from = "--min-speedup";
  }
  p.measure_speedup = p.min_speedup > 0 || o.speedup;
  p.forced = spec_from_flags(o, p.tolerances);
  if (o.spec) p.forced = parse_spec(*o.spec, m, "the judge option \"spec\"", p.tolerances);
  // A forced spec's own tolerance is the user's: the region tolerances still apply on top.
  if (p.forced) p.forced = with_region_tolerances(*p.forced, p.region_tolerances, m, p.tolerances);
  p.exact = o.exact;
  p.check_determinism = !o.no_determinism;
  p.fuzz = o.fuzz;
  p.seed = o.seed;
  return p;
}

std::filesystem::path kerncap_toml_path(const format::Capture& cap) {
  return cap.dir.parent_path() / format::kKerncapTomlName;
}

JudgePolicy load_policy(const JudgeOverrides& o, const format::Capture& cap) {
  return resolve_policy(o, format::load_kerncap_toml(cap.dir.parent_path()), kerncap_toml_path(cap).string(),
                        cap.manifest);
}

std::vector<TypedSpan> with_table(std::vector<TypedSpan> signature, const ToleranceTable& table) {
  for (auto& t : signature) t.tol = table_tolerance(t.dtype, table);
  return signature;
}

CompareSpec first_spec(const JudgePolicy& p, const format::Capture& cap, const std::vector<TypedSpan>& signature,
                       bool variant) {
  if (p.forced) return *p.forced;
  CompareSpec spec = default_spec(cap.dir, cap.manifest, p.tolerances);
  if (variant && !p.exact) {
    const std::string base = spec.source;
    const size_t before = spec.spans.size();
    const std::vector<TypedSpan> had = spec.spans;
    spec = tolerant_spec(spec, with_table(signature, p.tolerances), all_region_ids(cap.manifest), cap.manifest);
    spec.source = spec.spans.size() == before
                      ? base
                      : fmt::format("{} + {} (a variant, within tolerance)", base, types_from(had, spec.spans));
  }
  return with_region_tolerances(spec, p.region_tolerances, cap.manifest, p.tolerances);
}

CompareSpec nondeterministic_spec(const JudgePolicy& p, const CompareSpec& first, const std::vector<TypedSpan>& signature,
                                  const std::vector<uint32_t>& ids, const std::map<uint32_t, double>& spread,
                                  const format::Manifest& m) {
  CompareSpec spec = tolerant_spec(first, with_table(signature, p.tolerances), ids, m);
  // Nothing gained (an extern "C" kernel whose SASS gave no type): say so, not "signature types".
  spec.source = spec.spans.size() == first.spans.size()
                    ? fmt::format("{} + no element types (nondeterministic kernel)", first.source)
                    : fmt::format("{} + {} (nondeterministic kernel)", first.source, types_from(first.spans, spec.spans));
  spec = widen_by_spread(spec, spread, m);
  return with_region_tolerances(spec, p.region_tolerances, m, p.tolerances);
}

std::vector<uint32_t> nondeterministic_ids(const std::vector<uint32_t>& differing, bool float_atomics,
                                           const std::vector<TypedSpan>& types, const std::vector<uint32_t>& written,
                                           const format::Manifest& m) {
  std::vector<uint32_t> ids;
  for (const auto& r : m.regions) {
    bool in = std::find(differing.begin(), differing.end(), r.id) != differing.end();
    if (!in && float_atomics && std::find(written.begin(), written.end(), r.id) != written.end())
      in = std::any_of(types.begin(), types.end(), [&](const TypedSpan& t) {
        return compare::is_float(t.dtype) && t.base < r.base + r.size && t.base + t.size > r.base;
      });
    if (in) ids.push_back(r.id);
  }
  return ids;
}

std::string nondeterministic_cause(const std::string& float_atomics, size_t differing) {
  std::string cause;
  if (!float_atomics.empty()) cause = fmt::format("float atomics in its code ({})", float_atomics);
  if (differing)
    cause += fmt::format("{}two replays of the captured image differ in {} region(s)", cause.empty() ? "" : "; ",
                         differing);
  else if (!cause.empty())
    cause += ", though two replays of the captured image agreed";
  return cause;
}

}  // namespace kerncap::replay
