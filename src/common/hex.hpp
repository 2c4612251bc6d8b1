#pragma once
// Addresses travel through JSON as "0x..." strings (JSON numbers lose 64-bit precision).
#include <cstdint>
#include <string>
#include <string_view>

namespace kerncap {
std::string hex_addr(uint64_t v);
uint64_t parse_hex_addr(std::string_view s);  // throws Error(Input) on malformed text
std::string human_bytes(uint64_t n);          // "1.5 MiB"
}  // namespace kerncap
