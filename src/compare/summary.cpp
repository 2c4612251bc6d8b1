// The one-line verdict every tool prints for a compared region.
#include <fmt/format.h>

#include "compare/compare.hpp"

namespace kerncap::compare {

std::string summary(const Result& r) {
  if (r.pass() && r.exact()) return "byte-exact";
  const std::string errors = fmt::format("max abs {:.3g}, max rel {:.3g}", r.max_abs_error, r.max_rel_error);
  if (r.pass()) return fmt::format("identical within tolerance ({} bytes differ, {})", r.differing_bytes, errors);

  if (r.dtype == DType::Bytes)
    return fmt::format("{} of {} bytes differ, first at byte offset {}", r.mismatches, r.bytes,
                       r.first_bad_offset.value_or(0));
  std::string s = fmt::format("{} of {} {} elements differ, first at byte offset {}; {}", r.mismatches, r.elements,
                              to_string(r.dtype), r.first_bad_offset.value_or(0), errors);
  if (is_float(r.dtype)) {
    s += fmt::format("; NaN expected/actual {}/{}", r.nan_expected, r.nan_actual);
    if (r.inf_expected || r.inf_actual) s += fmt::format("; Inf expected/actual {}/{}", r.inf_expected, r.inf_actual);
  }
  return s;
}

}  // namespace kerncap::compare
