// normalise_internal_name / bind_globals: see global_match.hpp for why names move.
#include "replay/global_match.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::replay {
namespace {

constexpr std::string_view kInternal = "_INTERNAL_";
constexpr std::string_view kAnon = "_GLOBAL__N__";

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Does `id` (one length-prefixed identifier of the mangled name) have the shape nvcc gives
// a translation-unit scope: <marker><hex>_<n>_<n chars of file name>_<hex>? The file
// length must add up exactly, which keeps a user identifier that merely contains the
// marker from matching.
bool is_tu_scope(std::string_view id, std::string_view marker) {
  if (!id.starts_with(marker)) return false;
  size_t p = marker.size();
  const size_t hex1 = p;
  while (p < id.size() && is_hex(id[p])) ++p;
  if (p == hex1 || p >= id.size() || id[p] != '_') return false;
  const size_t digits = ++p;
  size_t file_len = 0;
  while (p < id.size() && is_digit(id[p])) {
    file_len = file_len * 10 + static_cast<size_t>(id[p] - '0');
    if (file_len > id.size()) return false;
    ++p;
  }
  if (p == digits || p >= id.size() || id[p] != '_') return false;
  p += 1 + file_len;  // the file name, e.g. main_cu
  if (p >= id.size() || id[p] != '_') return false;
  const std::string_view hex2 = id.substr(p + 1);
  return !hex2.empty() && std::all_of(hex2.begin(), hex2.end(), is_hex);
}

}  // namespace

std::string normalise_internal_name(std::string_view s) {
  std::string out;
  size_t copied = 0;  // s[0, copied) is in out
  for (size_t j = 1; j < s.size(); ++j) {
    const std::string_view marker = s.substr(j).starts_with(kInternal) ? kInternal
                                    : s.substr(j).starts_with(kAnon)   ? kAnon
                                                                        : std::string_view{};
    if (marker.empty() || !is_digit(s[j - 1])) continue;
    // The length prefix is a suffix of the digit run before the marker: the run may begin
    // with digits of what precedes it (an inline namespace "3__4" then "38_GLOBAL__N__...").
    for (size_t k = j; k > copied && is_digit(s[k - 1]); --k) {
      if (j - k >= 6) break;  // no identifier here is a million characters long
      const size_t len = std::stoul(std::string(s.substr(k - 1, j - k + 1)));
      if (j + len > s.size() || !is_tu_scope(s.substr(j, len), marker)) continue;
      out.append(s.substr(copied, k - 1 - copied));
      out.append(fmt::format("{}{}", marker.size(), marker));
      copied = j + len;
      j = copied - 1;
      break;
    }
  }
  out.append(s.substr(copied));
  return out;
}

std::vector<std::optional<std::string>> bind_globals(std::span<const std::string> captured,
                                                     std::span<const std::string> variant,
                                                     std::string_view variant_desc) {
  const std::set<std::string_view> exact(variant.begin(), variant.end());
  // Normalised name -> the globals not bound by their exact name, on each side.
  std::map<std::string, std::vector<std::string_view>> cap_by, var_by;
  const std::set<std::string_view> cap_names(captured.begin(), captured.end());
  for (const std::string& c : captured)
    if (!exact.contains(c)) cap_by[normalise_internal_name(c)].push_back(c);
  for (const std::string& v : variant)
    if (!cap_names.contains(v)) var_by[normalise_internal_name(v)].push_back(v);

  auto list = [](const std::vector<std::string_view>& v) {
    std::string s;
    for (std::string_view x : v) s += fmt::format("\n    {}", x);
    return s;
  };
  std::vector<std::optional<std::string>> out;
  out.reserve(captured.size());
  for (const std::string& c : captured) {
    if (exact.contains(c)) {
      out.emplace_back(c);
      continue;
    }
    const std::string key = normalise_internal_name(c);
    const auto& caps = cap_by[key];
    const auto it = var_by.find(key);
    if (it == var_by.end()) {
      out.emplace_back(std::nullopt);
      continue;
    }
    if (caps.size() != 1 || it->second.size() != 1)
      input_error(fmt::format(
          "cannot tell which module global of {} is the captured kernel's '{}': their names differ only in "
          "the translation-unit prefix nvcc gives internal-linkage names, and several share the rest.\n"
          "  captured:{}\n  in {}:{}\n"
          "Compile the variant as one translation unit holding the kernel, or give these variables distinct "
          "names.",
          variant_desc, c, list(caps), variant_desc, list(it->second)));
    out.emplace_back(std::string(it->second.front()));
  }
  return out;
}

}  // namespace kerncap::replay
