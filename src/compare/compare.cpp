// Placeholder until the comparator lands: byte-exact only.
#include "compare/compare.hpp"

#include <fmt/format.h>

namespace kerncap::compare {
const char* to_string(DType) { return "bytes"; }
std::optional<DType> dtype_from_string(const std::string& s) {
  if (s == "bytes") return DType::Bytes;
  return std::nullopt;
}
unsigned dtype_size(DType) { return 1; }
Comparator::Comparator(DType dtype, Tolerance tol) : dtype_(dtype), tol_(tol) { result_.dtype = dtype; }
void Comparator::feed(const uint8_t* e, const uint8_t* a, uint64_t n, uint64_t offset) {
  result_.bytes += n;
  result_.elements += n;
  for (uint64_t i = 0; i < n; ++i)
    if (e[i] != a[i]) {
      ++result_.differing_bytes;
      ++result_.mismatches;
      if (!result_.first_bad_offset) result_.first_bad_offset = offset + i;
    }
}
std::string summary(const Result& r) {
  if (r.exact()) return "byte-exact";
  return fmt::format("{} of {} bytes differ, first at offset {}", r.differing_bytes, r.bytes, *r.first_bad_offset);
}
}  // namespace kerncap::compare
