#include "replay/signature.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "names/kernel_name.hpp"

namespace kerncap::replay {

namespace {

// Drops qualifiers and spaces: "const __half *__restrict__" -> "__half*".
std::string bare(std::string_view t) {
  std::string s(t);
  for (const char* q : {"__restrict__", "__restrict", "const", "volatile"})
    for (size_t at; (at = s.find(q)) != std::string::npos;) s.erase(at, std::strlen(q));
  std::string out;
  for (char c : s)
    if (c != ' ') out += c;
  return out;
}

std::optional<compare::DType> element_dtype(const std::string& bare_type) {
  using compare::DType;
  static const std::map<std::string, DType, std::less<>> types = {
      {"float", DType::F32},          {"float2", DType::F32},          {"float4", DType::F32},
      {"double", DType::F64},         {"double2", DType::F64},         {"__half", DType::F16},
      {"half", DType::F16},           {"__half2", DType::F16},         {"__nv_bfloat16", DType::BF16},
      {"nv_bfloat16", DType::BF16},   {"__nv_bfloat162", DType::BF16}, {"__nv_fp8_e4m3", DType::F8E4M3},
      {"__nv_fp8_e5m2", DType::F8E5M2}, {"int", DType::I32},           {"int2", DType::I32},
      {"int4", DType::I32},           {"unsignedint", DType::U32},     {"unsigned", DType::U32},
      {"uint", DType::U32},           {"long", DType::I64},            {"longlong", DType::I64},
      {"unsignedlong", DType::U64},   {"unsignedlonglong", DType::U64}, {"short", DType::I16},
      {"unsignedshort", DType::U16},  {"char", DType::I8},             {"signedchar", DType::I8},
      {"unsignedchar", DType::U8},    {"int8_t", DType::I8},           {"uint8_t", DType::U8},
      {"int32_t", DType::I32},        {"uint32_t", DType::U32},        {"int64_t", DType::I64},
      {"uint64_t", DType::U64},       {"bool", DType::U8},
      // PyTorch's element types as they appear in ATen kernel signatures.
      {"c10::Half", DType::F16},      {"at::Half", DType::F16},        {"c10::BFloat16", DType::BF16},
      {"at::BFloat16", DType::BF16},  {"c10::Float8_e4m3fn", DType::F8E4M3}, {"c10::Float8_e5m2", DType::F8E5M2}};
  auto it = types.find(bare_type);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::optional<compare::DType> pointee_dtype(std::string_view param_type) {
  std::string s = bare(param_type);
  if (s.size() < 2 || s.back() != '*' || s[s.size() - 2] == '*') return std::nullopt;
  s.pop_back();
  return element_dtype(s);
}

std::optional<compare::DType> struct_element_dtype(std::string_view param_type) {
  const std::string s = bare(param_type);
  if (s.empty() || s.back() == '*' || s.back() == '&') return std::nullopt;
  const size_t open = s.find('<');
  if (open == std::string::npos) return std::nullopt;
  // The first template argument, up to a top-level ',' or the closing '>'.
  int depth = 0;
  size_t end = open + 1;
  for (; end < s.size(); ++end) {
    if (s[end] == '<' || s[end] == '(') ++depth;
    else if ((s[end] == '>' || s[end] == ')') && depth-- == 0) break;
    else if (s[end] == ',' && depth == 0) break;
  }
  if (end >= s.size()) return std::nullopt;
  return element_dtype(s.substr(open + 1, end - open - 1));
}

std::vector<TypedSpan> signature_spans(const format::Manifest& m, const std::vector<uint8_t>& params) {
  const auto name = names::parse_kernel_name(m.mangled_name, m.demangled_name);
  if (!name.cxx || name.params.size() != m.params.size()) return {};
  struct Ptr {
    uint64_t address;
    compare::DType dtype;
  };
  std::vector<Ptr> ptrs;
  for (size_t i = 0; i < m.params.size(); ++i) {
    const auto& slot = m.params[i];
    if (uint64_t{slot.offset} + slot.size > params.size()) continue;
    if (auto dtype = pointee_dtype(name.params[i])) {
      uint64_t a = 0;
      if (slot.size != 8) continue;
      std::memcpy(&a, params.data() + slot.offset, 8);
      if (a) ptrs.push_back({a, *dtype});
    } else if (auto elem = struct_element_dtype(name.params[i])) {
      // A tensor descriptor passed by value: the pointer words inside it that point into a
      // captured region hold elements of the descriptor's type.
      for (uint32_t o = 0; o + 8 <= slot.size; o += 8) {
        uint64_t a = 0;
        std::memcpy(&a, params.data() + slot.offset + o, 8);
        const bool in_region = std::any_of(m.regions.begin(), m.regions.end(), [&](const format::Region& r) {
          return a >= r.base && a - r.base < r.size;
        });
        if (a && in_region) ptrs.push_back({a, *elem});
      }
    }
  }
  std::sort(ptrs.begin(), ptrs.end(), [](auto& a, auto& b) { return a.address < b.address; });
  std::vector<TypedSpan> spans;
  for (size_t k = 0; k < ptrs.size(); ++k) {
    const uint64_t a = ptrs[k].address;
    auto r = std::find_if(m.regions.begin(), m.regions.end(),
                          [&](const format::Region& x) { return a >= x.base && a - x.base < x.size; });
    if (r == m.regions.end()) continue;
    uint64_t end = r->base + r->size;
    if (k + 1 < ptrs.size() && ptrs[k + 1].address < end) end = ptrs[k + 1].address;
    if (end > a) spans.push_back({a, end - a, ptrs[k].dtype, compare::default_tolerance(ptrs[k].dtype), "signature"});
  }
  return spans;
}

}  // namespace kerncap::replay
