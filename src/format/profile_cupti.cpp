#include "format/profile_cupti.hpp"

#include <charconv>
#include <vector>

#include <fmt/format.h>

namespace kerncap::format {
namespace {

// A count or a size: decimal, with an optional K, M or G (binary) suffix.
std::optional<uint64_t> parse_size(std::string_view s) {
  uint64_t unit = 1;
  if (!s.empty() && (s.back() == 'K' || s.back() == 'M' || s.back() == 'G')) {
    unit = s.back() == 'K' ? 1ull << 10 : s.back() == 'M' ? 1ull << 20 : 1ull << 30;
    s.remove_suffix(1);
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v > UINT64_MAX / unit) return std::nullopt;
  return v * unit;
}

std::optional<bool> parse_bool(std::string_view s) {
  if (s == "1") return true;
  if (s == "0") return false;
  return std::nullopt;
}

const char* kind_name(ProfileCupti::Kind k) {
  return k == ProfileCupti::Kind::Kernel ? "kernel" : k == ProfileCupti::Kind::Off ? "none" : "concurrent";
}

const char* callback_name(ProfileCupti::Callback c) {
  return c == ProfileCupti::Callback::Empty ? "empty" : c == ProfileCupti::Callback::Off ? "off" : "full";
}

}  // namespace

std::string profile_cupti_text(const ProfileCupti& p) {
  const ProfileCupti d;
  std::vector<std::string> parts;
  if (p.kind != d.kind) parts.push_back(fmt::format("kind={}", kind_name(p.kind)));
  if (p.memory != d.memory) parts.push_back(fmt::format("memory={}", p.memory ? 1 : 0));
  if (p.correlation_always != d.correlation_always)
    parts.push_back(fmt::format("correlation={}", p.correlation_always ? "always" : "window"));
  if (p.callback != d.callback) parts.push_back(fmt::format("callback={}", callback_name(p.callback)));
  if (p.host_buffer != d.host_buffer) parts.push_back(fmt::format("host_buffer={}", p.host_buffer));
  auto num = [&](const char* key, const std::optional<uint64_t>& v) {
    if (v) parts.push_back(fmt::format("{}={}", key, *v));
  };
  auto flag = [&](const char* key, const std::optional<bool>& v) {
    if (v) parts.push_back(fmt::format("{}={}", key, *v ? 1 : 0));
  };
  num("device_buffer", p.device_buffer);
  num("pool_limit", p.pool_limit);
  num("preallocate", p.preallocate);
  flag("per_thread", p.per_thread);
  flag("pinned", p.pinned);
  num("flush_ms", p.flush_ms);
  std::string s;
  for (const auto& part : parts) s += (s.empty() ? "" : ",") + part;
  return s;
}

std::string profile_cupti_from_text(std::string_view text, ProfileCupti* out) {
  ProfileCupti p;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return fmt::format("has '{}' without a value (key=value)", item);
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    const auto size = parse_size(value);
    const auto b = parse_bool(value);
    if (key == "kind") {
      if (value == "concurrent") p.kind = ProfileCupti::Kind::Concurrent;
      else if (value == "kernel") p.kind = ProfileCupti::Kind::Kernel;
      else if (value == "none") p.kind = ProfileCupti::Kind::Off;
      else return "kind must be concurrent, kernel or none";
    } else if (key == "correlation") {
      if (value == "window") p.correlation_always = false;
      else if (value == "always") p.correlation_always = true;
      else return "correlation must be window or always";
    } else if (key == "callback") {
      if (value == "full") p.callback = ProfileCupti::Callback::Full;
      else if (value == "empty") p.callback = ProfileCupti::Callback::Empty;
      else if (value == "off") p.callback = ProfileCupti::Callback::Off;
      else return "callback must be full, empty or off";
    } else if (key == "memory" || key == "per_thread" || key == "pinned") {
      if (!b) return fmt::format("{} must be 0 or 1", key);
      if (key == "memory") p.memory = *b;
      else if (key == "per_thread") p.per_thread = b;
      else p.pinned = b;
    } else if (key == "host_buffer") {
      if (!size || *size < 4096 || *size > (1ull << 30)) return "host_buffer must be from 4K to 1G bytes";
      p.host_buffer = *size & ~uint64_t{7};  // CUPTI wants 8-byte multiples
    } else if (key == "device_buffer" || key == "pool_limit" || key == "preallocate" || key == "flush_ms") {
      if (!size || *size == 0 || *size > UINT32_MAX) return fmt::format("{} must be a positive number", key);
      if (key == "device_buffer") p.device_buffer = size;
      else if (key == "pool_limit") p.pool_limit = size;
      else if (key == "preallocate") p.preallocate = size;
      else p.flush_ms = size;
    } else {
      return fmt::format("has an unknown key '{}' (kind, memory, correlation, callback, host_buffer, device_buffer, pool_limit, "
                         "preallocate, per_thread, pinned, flush_ms)",
                         key);
    }
  }
  *out = p;
  return "";
}

}  // namespace kerncap::format
