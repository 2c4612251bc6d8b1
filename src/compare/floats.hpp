#pragma once
// Decoding the floating-point element types to double, straight from their bits. Every
// format here converts to double exactly. Internal to src/compare (and its tests).
#include <array>
#include <bit>
#include <cstdint>
#include <limits>

namespace kerncap::compare::floats {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa; exponent 31 is Inf/NaN.
constexpr double f16_to_double(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const unsigned exp = (h >> 10) & 0x1f;
  const unsigned man = h & 0x3ff;
  if (exp == 0x1f) return man ? kNaN : sign * kInf;
  if (exp == 0) return sign * man * 0x1p-24;  // subnormal (and zero, keeping its sign)
  // Normal: rebias into binary32 (bias 127), where it fits exactly.
  return std::bit_cast<float>(static_cast<uint32_t>((h & 0x8000u) << 16 | (exp + 112) << 23 | man << 13));
}

// bfloat16 is the top half of a binary32.
constexpr double bf16_to_double(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// OCP FP8 E5M2 (__nv_fp8_e5m2): IEEE-like, the top byte of a binary16.
constexpr double e5m2_to_double(uint8_t b) { return f16_to_double(static_cast<uint16_t>(b << 8)); }

// OCP FP8 E4M3 (__nv_fp8_e4m3, "float8_e4m3fn"): 1 sign, 4 exponent (bias 7), 3 mantissa;
// no infinities, S.1111.111 is NaN, so exponent 15 holds normal values up to 448.
constexpr double e4m3_to_double(uint8_t b) {
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  const unsigned exp = (b >> 3) & 0xf;
  const unsigned man = b & 0x7;
  if (exp == 0xf && man == 0x7) return kNaN;
  if (exp == 0) return sign * man * 0x1p-9;
  double scale = 0x1p-10;  // (8 + man) * 2^(exp - 7 - 3)
  for (unsigned i = 0; i < exp; ++i) scale *= 2;
  return sign * (8 + man) * scale;
}

// Per-type traits the comparator is instantiated with: raw bits, value, NaN/Inf from bits,
// and kSpecial: the bits that are all set in every NaN/Inf (the exponent; e4m3: NaN's 7 bits).
template <typename Self>
struct Traits {
  static bool special(auto b) { return (b & Self::kSpecial) == Self::kSpecial; }
};
struct F64 : Traits<F64> {
  using Bits = uint64_t;
  static constexpr Bits kSpecial = 0x7ff0000000000000ull;
  static double value(Bits b) { return std::bit_cast<double>(b); }
  static bool nan(Bits b) { return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }
  static bool inf(Bits b) { return (b & 0x7fffffffffffffffull) == 0x7ff0000000000000ull; }
};
struct F32 : Traits<F32> {
  using Bits = uint32_t;
  static constexpr Bits kSpecial = 0x7f800000u;
  static double value(Bits b) { return std::bit_cast<float>(b); }
  static bool nan(Bits b) { return (b & 0x7fffffffu) > 0x7f800000u; }
  static bool inf(Bits b) { return (b & 0x7fffffffu) == 0x7f800000u; }
};
struct F16 : Traits<F16> {
  using Bits = uint16_t;
  static constexpr Bits kSpecial = 0x7c00;
  static double value(Bits b) { return f16_to_double(b); }
  static bool nan(Bits b) { return (b & 0x7fff) > 0x7c00; }
  static bool inf(Bits b) { return (b & 0x7fff) == 0x7c00; }
};
struct BF16 : Traits<BF16> {
  using Bits = uint16_t;
  static constexpr Bits kSpecial = 0x7f80;
  static double value(Bits b) { return bf16_to_double(b); }
  static bool nan(Bits b) { return (b & 0x7fff) > 0x7f80; }
  static bool inf(Bits b) { return (b & 0x7fff) == 0x7f80; }
};
struct E4M3 : Traits<E4M3> {
  using Bits = uint8_t;
  static constexpr Bits kSpecial = 0x7f;
  static constexpr std::array<double, 256> kTable = [] {
    std::array<double, 256> t{};
    for (unsigned i = 0; i < 256; ++i) t[i] = e4m3_to_double(static_cast<uint8_t>(i));
    return t;
  }();
  static double value(Bits b) { return kTable[b]; }
  static bool nan(Bits b) { return (b & 0x7f) == 0x7f; }
  static bool inf(Bits) { return false; }
};
struct E5M2 : Traits<E5M2> {
  using Bits = uint8_t;
  static constexpr Bits kSpecial = 0x7c;
  static double value(Bits b) { return e5m2_to_double(b); }
  static bool nan(Bits b) { return (b & 0x7f) > 0x7c; }
  static bool inf(Bits b) { return (b & 0x7f) == 0x7c; }
};

}  // namespace kerncap::compare::floats
