#include <algorithm>

#include "compare/compare.hpp"

namespace kerncap::compare {

void merge(Result& into, const Result& part) {
  if (into.bytes == 0) {
    into = part;
    return;
  }
  if (part.bytes == 0) return;
  if (into.dtype != part.dtype) into.dtype = DType::Bytes;
  into.bytes += part.bytes;
  into.elements += part.elements;
  into.mismatches += part.mismatches;
  into.differing_bytes += part.differing_bytes;
  if (part.first_bad_offset && (!into.first_bad_offset || *part.first_bad_offset < *into.first_bad_offset))
    into.first_bad_offset = part.first_bad_offset;
  into.max_abs_error = std::max(into.max_abs_error, part.max_abs_error);
  into.max_rel_error = std::max(into.max_rel_error, part.max_rel_error);
  into.nan_expected += part.nan_expected;
  into.nan_actual += part.nan_actual;
  into.inf_expected += part.inf_expected;
  into.inf_actual += part.inf_actual;
}

}  // namespace kerncap::compare
