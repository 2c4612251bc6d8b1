#include "format/swaps.hpp"

#include <algorithm>
#include <system_error>

#include <fmt/format.h>

#include "common/error.hpp"
#include "format/safe_file.hpp"
#include "format/strict_json.hpp"

namespace kerncap::format {
namespace fs = std::filesystem;

namespace {
constexpr size_t kMaxName = 64 << 10;     // a mangled name (templates get long, not this long)
constexpr size_t kMaxPath = 4096;
constexpr uint64_t kMaxReportBytes = 1 << 20;
}  // namespace

std::string swaps_to_text(const std::vector<SwapSpec>& swaps) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : swaps) {
    nlohmann::json e = {{"kernel", s.kernel}, {"entry", s.entry}, {"image", s.image}, {"apply", s.apply}};
    if (s.shadow_every) e["shadow"] = {{"every", s.shadow_every}, {"max_bytes", s.shadow_max_bytes}};
    if (!s.param_dtypes.empty()) e["param_dtypes"] = s.param_dtypes;
    list.push_back(std::move(e));
  }
  return nlohmann::json{{"version", kSwapsVersion}, {"swaps", list}}.dump();
}

std::string swaps_from_text(std::string_view text, std::vector<SwapSpec>* out) {
  out->clear();
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "is not a JSON object";
  auto v = j.find("version");
  if (v == j.end() || !v->is_number_unsigned() || v->get<uint64_t>() != kSwapsVersion)
    return fmt::format("has another version than {} (the launcher and the library come from different builds)",
                       kSwapsVersion);
  auto list = j.find("swaps");
  if (list == j.end() || !list->is_array() || list->empty() || list->size() > kMaxSwaps)
    return fmt::format("needs a \"swaps\" array of 1 to {} entries", kMaxSwaps);
  std::vector<SwapSpec> swaps;
  for (const auto& e : *list) {
    if (!e.is_object()) return "has a swap that is not an object";
    SwapSpec s;
    for (auto [key, dest, max] : {std::tuple{"kernel", &s.kernel, kMaxName}, std::tuple{"entry", &s.entry, kMaxName},
                                  std::tuple{"image", &s.image, kMaxPath}}) {
      auto f = e.find(key);
      if (f == e.end() || !f->is_string() || f->get_ref<const std::string&>().empty() ||
          f->get_ref<const std::string&>().size() > max)
        return fmt::format("has a swap without a \"{}\" string", key);
      *dest = f->get<std::string>();
    }
    if (s.image.front() != '/') return "has a swap whose image is not an absolute path";
    auto a = e.find("apply");
    if (a != e.end()) {
      if (!a->is_boolean()) return "has a swap whose \"apply\" is not true or false";
      s.apply = a->get<bool>();
    }
    if (auto sh = e.find("shadow"); sh != e.end()) {
      auto every = sh->is_object() ? sh->find("every") : sh->end();
      auto max = sh->is_object() ? sh->find("max_bytes") : sh->end();
      if (every == sh->end() || !every->is_number_unsigned() || every->get<uint64_t>() == 0 || max == sh->end() ||
          !max->is_number_unsigned())
        return "has a \"shadow\" that is not {\"every\": N >= 1, \"max_bytes\": N}";
      s.shadow_every = every->get<uint64_t>();
      s.shadow_max_bytes = max->get<uint64_t>();
      if (s.apply) return "has a swap both applied and shadowed";
    }
    if (auto dt = e.find("param_dtypes"); dt != e.end()) {
      if (!dt->is_array() || dt->size() > 4096) return "has \"param_dtypes\" that is not an array of names";
      for (const auto& d : *dt) {
        if (!d.is_string() || d.get_ref<const std::string&>().size() > 16) return "has a parameter type that is not a short name";
        s.param_dtypes.push_back(d.get<std::string>());
      }
    }
    if (std::any_of(swaps.begin(), swaps.end(), [&](const SwapSpec& o) { return o.kernel == s.kernel; }))
      return "names one kernel twice";
    swaps.push_back(std::move(s));
  }
  *out = std::move(swaps);
  return "";
}

nlohmann::json swap_report_json(const SwapReport& r) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : r.kernels) {
    nlohmann::json e = {{"kernel", k.kernel},           {"entry", k.entry},       {"apply", k.apply},
                        {"launches", k.launches},       {"swapped", k.swapped},   {"graph_nodes", k.graph_nodes}};
    if (!k.refused.empty()) e["refused"] = k.refused;
    if (k.shadow_checked || k.shadow_skipped)
      e["shadow"] = {{"checked", k.shadow_checked}, {"skipped", k.shadow_skipped}, {"failed", k.shadow_failed},
                     {"skip_reason", k.shadow_skip_reason}, {"seconds", k.shadow_seconds},
                     {"first_failure", k.first_failure}};
    kernels.push_back(std::move(e));
  }
  return {{"format", kSwapReportFormat}, {"version", kSwapReportVersion}, {"pid", r.pid}, {"kernels", kernels}};
}

SwapReport read_swap_report(const fs::path& file) {
  const ReadOnlyFile f = ReadOnlyFile::open(file, false);
  const std::vector<uint8_t> bytes = f.read_all(kMaxReportBytes);
  const JsonDoc doc{fmt::format("swap report {}", file.string()),
                    "it was not written by this kerncap's library; run the application again"};
  const nlohmann::json j = parse_bounded_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), doc);
  const JsonField root(j, doc);
  root.object();
  if (root.at("format").str(64) != kSwapReportFormat) root.at("format").fail("is not \"kerncap-swap-report\"");
  if (root.at("version").u32() != kSwapReportVersion)
    root.at("version").fail(fmt::format("is not {} (another kerncap wrote it)", kSwapReportVersion));
  SwapReport r;
  r.pid = root.at("pid").i64(0);
  const JsonField list = root.at("kernels");
  const size_t n = list.array_size(kMaxSwaps);
  for (size_t i = 0; i < n; ++i) {
    const JsonField e = list.elem(i);
    SwapCount c;
    c.kernel = e.at("kernel").str(kMaxName);
    c.entry = e.at("entry").str(kMaxName);
    c.apply = e.at("apply").boolean();
    c.launches = e.at("launches").u64();
    c.swapped = e.at("swapped").u64(0, c.launches);
    c.graph_nodes = e.at("graph_nodes").u64();
    if (auto why = e.find("refused")) c.refused = why->str(4096);
    if (auto sh = e.find("shadow")) {
      c.shadow_checked = sh->at("checked").u64();
      c.shadow_skipped = sh->at("skipped").u64();
      c.shadow_failed = sh->at("failed").u64(0, c.shadow_checked);
      c.shadow_skip_reason = sh->at("skip_reason").str(4096);
      c.shadow_seconds = sh->at("seconds").number();
      const nlohmann::json& ff = sh->at("first_failure").json();
      if (!ff.is_null() && !ff.is_object()) sh->at("first_failure").wrong_type("an object or null");
      c.first_failure = ff;
    }
    r.kernels.push_back(std::move(c));
  }
  return r;
}

std::string swap_report_name(int64_t pid) { return fmt::format("swap-{}.json", pid); }

std::vector<SwapReport> read_swap_reports(const fs::path& dir) {
  std::vector<SwapReport> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("swap-") && name.ends_with(".json")) out.push_back(read_swap_report(it->path()));
  }
  std::sort(out.begin(), out.end(), [](const SwapReport& a, const SwapReport& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace kerncap::format
