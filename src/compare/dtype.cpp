// Element types: names, sizes, default tolerances.
#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "compare/compare.hpp"

namespace kerncap::compare {
namespace {

struct Spelling {
  std::string_view name;
  DType type;
};

// The first spelling of each type is its canonical name (to_string).
constexpr std::array kSpellings{
    Spelling{"bytes", DType::Bytes},    Spelling{"raw", DType::Bytes},
    Spelling{"fp64", DType::F64},       Spelling{"f64", DType::F64},
    Spelling{"float64", DType::F64},    Spelling{"double", DType::F64},
    Spelling{"fp32", DType::F32},       Spelling{"f32", DType::F32},
    Spelling{"float32", DType::F32},    Spelling{"float", DType::F32},
    Spelling{"fp16", DType::F16},       Spelling{"f16", DType::F16},
    Spelling{"float16", DType::F16},    Spelling{"half", DType::F16},
    Spelling{"bf16", DType::BF16},      Spelling{"bfloat16", DType::BF16},
    Spelling{"fp8e4m3", DType::F8E4M3}, Spelling{"e4m3", DType::F8E4M3},
    Spelling{"e4m3fn", DType::F8E4M3},  Spelling{"fp8_e4m3", DType::F8E4M3},
    Spelling{"f8e4m3", DType::F8E4M3},  Spelling{"float8_e4m3fn", DType::F8E4M3},
    Spelling{"float8_e4m3", DType::F8E4M3},
    Spelling{"fp8e5m2", DType::F8E5M2}, Spelling{"e5m2", DType::F8E5M2},
    Spelling{"fp8_e5m2", DType::F8E5M2}, Spelling{"f8e5m2", DType::F8E5M2},
    Spelling{"float8_e5m2", DType::F8E5M2},
    Spelling{"i8", DType::I8},          Spelling{"int8", DType::I8},
    Spelling{"i16", DType::I16},        Spelling{"int16", DType::I16},
    Spelling{"short", DType::I16},
    Spelling{"i32", DType::I32},        Spelling{"int32", DType::I32},
    Spelling{"int", DType::I32},
    Spelling{"i64", DType::I64},        Spelling{"int64", DType::I64},
    Spelling{"long", DType::I64},
    Spelling{"u8", DType::U8},          Spelling{"uint8", DType::U8},
    Spelling{"bool", DType::U8},        Spelling{"uchar", DType::U8},
    Spelling{"u16", DType::U16},        Spelling{"uint16", DType::U16},
    Spelling{"u32", DType::U32},        Spelling{"uint32", DType::U32},
    Spelling{"uint", DType::U32},
    Spelling{"u64", DType::U64},        Spelling{"uint64", DType::U64},
};

}  // namespace

const char* to_string(DType t) {
  for (const auto& s : kSpellings)
    if (s.type == t) return s.name.data();  // literals: NUL-terminated
  return "bytes";
}

std::optional<DType> dtype_from_string(const std::string& in) {
  std::string s(in);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string_view v(s);
  for (std::string_view prefix : {"torch.", "numpy.", "np."})
    if (v.starts_with(prefix)) v.remove_prefix(prefix.size());
  for (const auto& sp : kSpellings)
    if (sp.name == v) return sp.type;
  return std::nullopt;
}

unsigned dtype_size(DType t) {
  switch (t) {
    case DType::Bytes:
    case DType::F8E4M3:
    case DType::F8E5M2:
    case DType::I8:
    case DType::U8: return 1;
    case DType::F16:
    case DType::BF16:
    case DType::I16:
    case DType::U16: return 2;
    case DType::F32:
    case DType::I32:
    case DType::U32: return 4;
    case DType::F64:
    case DType::I64:
    case DType::U64: return 8;
  }
  return 1;
}

bool is_float(DType t) {
  switch (t) {
    case DType::F64:
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::F8E4M3:
    case DType::F8E5M2: return true;
    default: return false;
  }
}

Tolerance default_tolerance(DType t) {
  switch (t) {
    case DType::F64: return {.atol = 1e-12, .rtol = 1e-12};
    case DType::F32: return {.atol = 1e-6, .rtol = 1e-5};
    case DType::F16: return {.atol = 1e-3, .rtol = 1e-3};
    case DType::BF16: return {.atol = 1e-2, .rtol = 1e-2};
    // fp8 keeps 3 (e4m3) or 2 (e5m2) mantissa bits: one step at the bottom of a binade is
    // 1/8 or 1/4 relative, and a changed kernel rounding the other way must still pass.
    case DType::F8E4M3: return {.atol = 0.125, .rtol = 0.125};
    case DType::F8E5M2: return {.atol = 0.25, .rtol = 0.25};
    default: return {};
  }
}

}  // namespace kerncap::compare
