#include "replay/compare_spec.hpp"
#include "format/out_layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "format/safe_file.hpp"
#include "format/strict_json.hpp"

namespace kerncap::replay {
namespace fs = std::filesystem;

namespace {

std::optional<double> number_or_null(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number()) input_error(fmt::format("{}: \"{}\" must be a number or null", where, key));
  return j[key].get<double>();
}

compare::DType dtype_of(const nlohmann::json& j, const std::string& where) {
  if (!j.contains("dtype") || j["dtype"].is_null()) return compare::DType::Bytes;
  if (!j["dtype"].is_string()) input_error(fmt::format("{}: \"dtype\" must be a string", where));
  auto d = compare::dtype_from_string(j["dtype"].get<std::string>());
  if (!d)
    input_error(fmt::format("{}: unknown dtype '{}' (bytes, fp64, fp32, fp16, bf16, fp8e4m3, fp8e5m2, i8..i64, u8..u64)",
                            where, j["dtype"].get<std::string>()));
  return *d;
}

uint64_t address_of(const nlohmann::json& v, const std::string& where) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    errno = 0;
    unsigned long long a = std::strtoull(s.c_str(), &end, 0);
    if (!s.empty() && end && *end == '\0' && errno == 0) return a;
  }
  input_error(fmt::format("{}: \"base\" must be an unsigned integer or a \"0x...\" string", where));
}

}  // namespace

bool changes_defaults(const ToleranceTable& table) {
  for (const auto& [dtype, tol] : table) {
    const compare::Tolerance d = compare::default_tolerance(dtype);
    if (tol.atol != d.atol || tol.rtol != d.rtol || tol.nan_equal != d.nan_equal) return true;
  }
  return false;
}

compare::Tolerance table_tolerance(compare::DType dtype, const ToleranceTable& table) {
  const auto it = table.find(dtype);
  return it == table.end() ? compare::default_tolerance(dtype) : it->second;
}

compare::Tolerance resolve_tolerance(compare::DType dtype, std::optional<double> atol, std::optional<double> rtol,
                                     const ToleranceTable& table) {
  compare::Tolerance t = table_tolerance(dtype, table);
  for (auto [name, v] : {std::pair{"atol", atol}, std::pair{"rtol", rtol}})
    if (v && (!std::isfinite(*v) || *v < 0))
      usage_error(fmt::format("{} must be a finite number >= 0 (got {})", name, *v));
  if (atol) t.atol = *atol;
  if (rtol) t.rtol = *rtol;
  return t;
}

CompareSpec parse_spec(const nlohmann::json& j, const format::Manifest& m, const std::string& source,
                       const ToleranceTable& table) {
  if (!j.is_object()) input_error(fmt::format("{}: the comparison spec must be a JSON object", source));
  CompareSpec spec;
  spec.source = source;
  try {
    spec.dtype = dtype_of(j, source);
    spec.tol =
        resolve_tolerance(spec.dtype, number_or_null(j, "atol", source), number_or_null(j, "rtol", source), table);
    if (j.contains("spans") && !j["spans"].is_null()) {
      if (!j["spans"].is_array()) input_error(fmt::format("{}: \"spans\" must be an array", source));
      if (j["spans"].size() > 1'000'000) input_error(fmt::format("{}: more than a million spans", source));
      size_t k = 0;
      for (const auto& s : j["spans"]) {
        const std::string where = fmt::format("{}: spans[{}]", source, k++);
        if (!s.is_object() || !s.contains("base") || !s.contains("size") || !s["size"].is_number_unsigned())
          input_error(fmt::format("{} needs \"base\" and an unsigned \"size\"", where));
        TypedSpan t;
        t.base = address_of(s["base"], where);
        t.size = s["size"].get<uint64_t>();
        t.dtype = dtype_of(s, where);
        t.tol = resolve_tolerance(t.dtype, number_or_null(s, "atol", where), number_or_null(s, "rtol", where), table);
        t.source = source;
        const bool inside = std::any_of(m.regions.begin(), m.regions.end(), [&](const format::Region& r) {
          return t.size <= r.size && t.base >= r.base && t.base - r.base <= r.size - t.size;
        });
        if (!inside)
          input_error(fmt::format("{} ({} bytes at {}) lies in no captured region", where, t.size, hex_addr(t.base)));
        if (t.size) spec.spans.push_back(t);
      }
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Usage) input_error(fmt::format("{}: {}", source, e.what()));
    throw;
  }
  std::sort(spec.spans.begin(), spec.spans.end(), [](auto& a, auto& b) { return a.base < b.base; });
  return spec;
}

CompareSpec default_spec(const fs::path& capture_dir, const format::Manifest& m, const ToleranceTable& table) {
  const fs::path out = capture_dir.parent_path();
  const fs::path file = out / format::out::kCompareSpec;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) return CompareSpec{.source = "default"};
  // Untrusted input like kerncap.toml (reproducers are shared): a regular file inside OUT
  // only, opened once (no link followed out of OUT, no FIFO to block on, no device to read
  // forever, no directory silently taken for "no spec"), bounded, and strict JSON (no key
  // twice, nothing after a NUL).
  const format::ReadOnlyFile f =
      format::ReadOnlyFile::open_in(out, std::string(format::out::kCompareSpec), "the comparison spec");
  const std::vector<uint8_t> bytes = f.read_all(format::kMaxJsonBytes);
  const auto j = format::parse_bounded_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                            format::JsonDoc{file.string(), "fix it or remove it"});
  return parse_spec(j, m, file.string(), table);
}

std::vector<Piece> pieces_of(const format::Region& r, const CompareSpec& spec) {
  std::vector<Piece> out;
  const std::string own = spec.dtype == compare::DType::Bytes ? "" : spec.source;
  uint64_t at = 0;
  for (const auto& s : spec.spans) {
    if (s.base + s.size <= r.base || s.base >= r.base + r.size) continue;
    uint64_t b = std::max(s.base, r.base) - r.base, e = std::min(s.base + s.size, r.base + r.size) - r.base;
    if (e <= at) continue;  // overlapped by an earlier span: the first one wins
    b = std::max(b, at);
    if (b > at) out.push_back({at, b, spec.dtype, spec.tol, own});
    out.push_back({b, e, s.dtype, s.tol, s.source});
    at = e;
  }
  if (at < r.size) out.push_back({at, r.size, spec.dtype, spec.tol, own});
  return out;
}

RegionTolerance parse_region_tolerance(const std::string& text) {
  const std::string usage = fmt::format(
      "--tolerance {}: expected REGION:atol=A,rtol=B[,dtype=T] (REGION: the region id validate prints)", text);
  const auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0) usage_error(usage);
  RegionTolerance r;
  try {
    size_t used = 0;
    const unsigned long id = std::stoul(text.substr(0, colon), &used);
    if (used != colon || id > UINT32_MAX) usage_error(usage);
    r.region = static_cast<uint32_t>(id);
  } catch (const std::logic_error&) {
    usage_error(usage);
  }
  std::string rest = text.substr(colon + 1);
  for (size_t at = 0; at <= rest.size();) {
    const size_t comma = std::min(rest.find(',', at), rest.size());
    const std::string item = rest.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) usage_error(usage);
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "dtype") {
      r.dtype = compare::dtype_from_string(value);
      if (!r.dtype) usage_error(fmt::format("--tolerance {}: unknown dtype '{}'", text, value));
      continue;
    }
    if (key != "atol" && key != "rtol") usage_error(usage);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
      usage_error(fmt::format("--tolerance {}: {} must be a finite number >= 0", text, key));
    (key == "atol" ? r.atol : r.rtol) = v;
  }
  if (!r.dtype && !r.atol && !r.rtol) usage_error(usage);
  return r;
}

CompareSpec with_region_tolerances(const CompareSpec& spec, const std::vector<RegionTolerance>& overrides,
                                   const format::Manifest& m, const ToleranceTable& table) {
  if (overrides.empty()) return spec;
  CompareSpec out = spec;
  for (const RegionTolerance& o : overrides) {
    auto r = std::find_if(m.regions.begin(), m.regions.end(), [&](const format::Region& x) { return x.id == o.region; });
    if (r == m.regions.end()) usage_error(fmt::format("--tolerance: the capture has no region {}", o.region));
    std::vector<TypedSpan> inside;
    if (o.dtype) {
      inside.push_back({r->base, r->size, *o.dtype, resolve_tolerance(*o.dtype, o.atol, o.rtol, table), "--tolerance"});
    } else {
      // Each typed piece keeps its type (spans, or the forced dtype between them); bytes
      // compare exactly and stay as they are.
      for (const Piece& p : pieces_of(*r, out)) {
        if (p.dtype == compare::DType::Bytes) continue;
        compare::Tolerance t = p.tol;
        if (o.atol) t.atol = *o.atol;
        if (o.rtol) t.rtol = *o.rtol;
        inside.push_back({r->base + p.begin, p.end - p.begin, p.dtype, t, p.source});
      }
      if (inside.empty())
        usage_error(fmt::format("--tolerance {}:...: region {} is compared as bytes (exactly); give its element type "
                                "too, e.g. {}:dtype=fp32,atol=...",
                                o.region, o.region, o.region));
    }
    std::erase_if(out.spans, [&](const TypedSpan& s) { return s.base < r->base + r->size && s.base + s.size > r->base; });
    out.spans.insert(out.spans.end(), inside.begin(), inside.end());
    std::sort(out.spans.begin(), out.spans.end(), [](auto& a, auto& b) { return a.base < b.base; });
  }
  if (out.source.find("--tolerance") == std::string::npos) out.source += " + --tolerance";
  return out;
}

}  // namespace kerncap::replay
