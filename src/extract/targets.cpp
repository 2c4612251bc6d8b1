#include "extract/targets.hpp"

#include <charconv>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::extract {

TargetRequest parse_kernel_arg(const std::string& arg, uint64_t default_dispatch, bool regex) {
  TargetRequest t;
  t.match = regex ? format::MatchKind::Regex : format::MatchKind::Substring;
  t.kernel = arg;
  t.dispatch = default_dispatch;
  const size_t at = arg.rfind('@');
  if (at != std::string::npos && at + 1 < arg.size() &&
      arg.find_first_not_of("0123456789", at + 1) == std::string::npos) {
    uint64_t n = 0;
    const char* first = arg.data() + at + 1;
    const char* last = arg.data() + arg.size();
    auto [end, ec] = std::from_chars(first, last, n);
    if (ec != std::errc() || end != last)
      usage_error(fmt::format("--kernel '{}': the dispatch count after '@' is too large", arg));
    t.kernel = arg.substr(0, at);
    t.dispatch = n;
  }
  if (t.kernel.empty()) usage_error(fmt::format("--kernel '{}' names no kernel (the pattern is empty)", arg));
  t.label = t.kernel;
  return t;
}

std::string safe_name(std::string_view label) {
  std::string_view s = label;
  // "void ns::kern<float>(float*, int)": the part before the parameter list, without the
  // return type and template arguments, reads best; fall back to the whole label.
  if (size_t p = s.find('('); p != std::string_view::npos && p > 0) s = s.substr(0, p);
  if (size_t t = s.find('<'); t != std::string_view::npos && t > 0) s = s.substr(0, t);
  if (size_t sp = s.rfind(' '); sp != std::string_view::npos && sp + 1 < s.size()) s = s.substr(sp + 1);
  if (size_t ns = s.rfind("::"); ns != std::string_view::npos && ns + 2 < s.size()) s = s.substr(ns + 2);
  std::string out;
  for (char c : s) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '-' || c == '_';
    const char r = keep ? c : '_';
    if (r == '_' && !out.empty() && out.back() == '_') continue;
    out += r;
    if (out.size() >= 40) break;
  }
  while (!out.empty() && (out.front() == '.' || out.front() == '_' || out.front() == '-')) out.erase(out.begin());
  while (!out.empty() && (out.back() == '.' || out.back() == '_')) out.pop_back();
  return out.empty() ? "kernel" : out;
}

std::string target_dir_name(size_t index, const TargetRequest& t) {
  return fmt::format("{:02}-{}", index, safe_name(t.label.empty() ? t.kernel : t.label));
}

void check_targets(const std::vector<TargetRequest>& targets) {
  if (targets.size() > format::kMaxTargets)
    usage_error(fmt::format("{} targets: one run takes at most {}", targets.size(), format::kMaxTargets));
  std::set<std::tuple<std::string, format::MatchKind, uint64_t>> seen;
  for (const auto& t : targets)
    if (!seen.emplace(t.kernel, t.match, t.dispatch).second)
      usage_error(fmt::format("the target '{}' (dispatch {}) is given twice", t.kernel, t.dispatch));
}

nlohmann::json targets_index(const std::vector<TargetOutcome>& outcomes, const std::string& application) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const TargetOutcome& o = outcomes[i];
    nlohmann::json t = {{"index", i},
                        {"kernel", o.request.kernel},
                        {"match", format::to_string(o.request.match)},
                        {"dispatch", o.request.dispatch},
                        {"dir", o.dir},
                        {"captured", o.captured}};
    if (o.captured) {
      t["captured_kernel"] = o.kernel;
      t["launch_index"] = o.launch_index;
    } else {
      t["why"] = o.why;
    }
    list.push_back(std::move(t));
  }
  return {{"format", kTargetsIndexFormat},
          {"version", kTargetsIndexVersion},
          {"application", application},
          {"targets", std::move(list)}};
}

}  // namespace kerncap::extract
