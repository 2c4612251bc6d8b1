// normalise_internal_name / bind_globals: see global_match.hpp for why names move.
#include "replay/global_match.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/log.hpp"

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
  // Then a tail nvcc derives per translation unit: a hash ("_1a2b3c4d") in CUDA 12; in
  // CUDA 13 also a symbol of the unit ("_weights") or a hash and a counter ("_0efc21a4_938",
  // nvlink's __nv_static_ form). Any identifier characters: the exact file length above is
  // what anchors the match.
  const std::string_view tail = id.substr(p + 1);
  return !tail.empty() && std::all_of(tail.begin(), tail.end(), [](char c) {
    return is_hex(c) || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
}

// nvlink's prefix for a file-local variable of an -rdc translation unit:
// "__nv_static_" <n> "_" <n chars: _<hex>_<len>_<file>_<hex>> "_" <the name>. Its length.
size_t nv_static_prefix(std::string_view s) {
  constexpr std::string_view kStatic = "__nv_static_";
  if (!s.starts_with(kStatic)) return 0;
  size_t p = kStatic.size(), n = 0;
  const size_t digits = p;
  while (p < s.size() && is_digit(s[p]) && p - digits < 6) n = n * 10 + static_cast<size_t>(s[p++] - '0');
  if (p == digits || p >= s.size() || s[p] != '_') return 0;
  ++p;
  if (n == 0 || p + n >= s.size() || s[p + n] != '_') return 0;
  // The scope has the shape of an _INTERNAL_ one without its marker.
  if (!is_tu_scope(fmt::format("_INTERNAL_{}", s.substr(p + 1, n - 1)), "_INTERNAL_")) return 0;
  return p + n + 1;
}

}  // namespace

std::string normalise_internal_name(std::string_view s) {
  std::string out;
  size_t copied = 0;  // s[0, copied) is in out
  // Dropped, not replaced: the same variable compiled whole-program (as a variant is) has
  // no such scope at all.
  copied = nv_static_prefix(s);
  for (size_t j = copied + 1; j < s.size(); ++j) {
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

namespace {

using Group = std::vector<const ModuleGlobal*>;

std::string list(const Group& v) {
  std::string s;
  for (const ModuleGlobal* g : v)
    s += fmt::format("\n    {} ({} bytes{})", g->name, g->size, g->used ? ", used by the kernel" : "");
  return s;
}

Group only(const Group& v, auto keep) {
  Group out;
  for (const ModuleGlobal* g : v)
    if (keep(*g)) out.push_back(g);
  return out;
}

// Among globals of one normalised name on both sides, the one `c` is: the single one each
// kernel uses, else the single one of c's size on each side. nullptr when neither decides.
const ModuleGlobal* disambiguate(const ModuleGlobal& c, const Group& caps, const Group& vars) {
  const auto used = [](const ModuleGlobal& g) { return g.used; };
  const Group caps_used = only(caps, used), vars_used = only(vars, used);
  if (caps_used.size() == 1 && caps_used[0] == &c && vars_used.size() == 1) return vars_used[0];
  const auto sized = [&](const ModuleGlobal& g) { return g.size == c.size; };
  const Group caps_sized = only(caps, sized), vars_sized = only(vars, sized);
  if (caps_sized.size() == 1 && vars_sized.size() == 1) return vars_sized[0];
  return nullptr;
}

// The variant global `c` binds to (see bind_globals).
std::optional<std::string> bind_one(const ModuleGlobal& c, const std::map<std::string, Group>& cap_by,
                                    const std::map<std::string, Group>& var_by,
                                    const std::set<std::string_view>& var_names, std::string_view variant_desc) {
  if (var_names.contains(c.name)) return c.name;
  const std::string key = normalise_internal_name(c.name);
  const Group& caps = cap_by.at(key);  // c itself is there
  const auto found = var_by.find(key);
  const Group vars = found == var_by.end() ? Group{} : found->second;
  if (vars.empty()) {
    // A variant without the variable cannot read it (an edit that computes a table instead of
    // loading it, a no-op kernel): nothing to restore. Said, because a name nvcc changed in a
    // way the normalisation does not know would look the same.
    if (c.used)
      log::info("{} has no module global '{}' ({} bytes) that the captured kernel uses, not even under another "
                "translation unit's prefix; it is not restored for the variant",
                variant_desc, c.name, c.size);
    return std::nullopt;
  }
  if (caps.size() == 1 && vars.size() == 1) return vars.front()->name;
  if (const ModuleGlobal* v = disambiguate(c, caps, vars)) return v->name;
  if (!c.used) return std::nullopt;  // the captured kernel never reads it: which one does not matter
  input_error(fmt::format(
      "cannot tell which module global of {} is the captured kernel's '{}': their names differ only in "
      "the translation-unit prefix nvcc gives internal-linkage names, and several share the rest, with "
      "neither use by the kernel nor size telling them apart.\n  captured:{}\n  in {}:{}\n"
      "Compile the variant as one translation unit holding the kernel, or give these variables distinct "
      "names.",
      variant_desc, c.name, list(caps), variant_desc, list(vars)));
}

}  // namespace

std::vector<std::optional<std::string>> bind_globals(std::span<const ModuleGlobal> captured,
                                                     std::span<const ModuleGlobal> variant,
                                                     std::string_view variant_desc) {
  std::set<std::string_view> var_names, cap_names;
  for (const ModuleGlobal& v : variant) var_names.insert(v.name);
  for (const ModuleGlobal& c : captured) cap_names.insert(c.name);
  // Normalised name -> the globals not bound by their exact name, on each side.
  std::map<std::string, Group> cap_by, var_by;
  for (const ModuleGlobal& c : captured)
    if (!var_names.contains(c.name)) cap_by[normalise_internal_name(c.name)].push_back(&c);
  for (const ModuleGlobal& v : variant)
    if (!cap_names.contains(v.name)) var_by[normalise_internal_name(v.name)].push_back(&v);

  std::vector<std::optional<std::string>> out;
  out.reserve(captured.size());
  for (const ModuleGlobal& c : captured) {
    out.emplace_back(bind_one(c, cap_by, var_by, var_names, variant_desc));
    if (!out.back()) continue;
    const auto v = std::find_if(variant.begin(), variant.end(), [&](const ModuleGlobal& g) { return g.name == *out.back(); });
    if (v != variant.end() && v->size != c.size)
      input_error(fmt::format("module global '{}' has {} bytes in {} but {} in the capture ('{}'); a variant must "
                              "keep the sizes of the module's __device__/__constant__ variables",
                              v->name, v->size, variant_desc, c.size, c.name));
  }
  return out;
}

}  // namespace kerncap::replay
