#include "common/hex.hpp"

#include <charconv>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap {

std::string hex_addr(uint64_t v) { return fmt::format("{:#x}", v); }

uint64_t parse_hex_addr(std::string_view s) {
  std::string_view digits = s;
  if (digits.starts_with("0x") || digits.starts_with("0X")) digits.remove_prefix(2);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 16);
  if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size())
    input_error(fmt::format("malformed address '{}' (expected hex like 0x7f0000000000)", s));
  return v;
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace kerncap
