#pragma once
// Element types from a C++ kernel's signature: each pointer parameter whose pointee is a
// known arithmetic type ("const __half*", "float*", "__nv_bfloat16*", "int*") types the
// captured bytes it points at, up to the next such pointer into the same region or the
// region's end; pointer words inside a by-value tensor descriptor type the same way with the
// descriptor's element type. Used when a kernel turns out nondeterministic, to compare its outputs as
// numbers with the default tolerance of their type instead of as bytes.
#include <optional>
#include <string_view>
#include <vector>

#include "compare/compare.hpp"
#include "format/manifest.hpp"
#include "replay/compare_spec.hpp"

namespace kerncap::replay {

// The element type a pointer parameter type points at, or nothing (not a pointer, a
// pointer to a struct, a pointer to pointer...).
std::optional<compare::DType> pointee_dtype(std::string_view param_type);
// The element type of a tensor descriptor passed by value, from its first template argument
// (PyTorch's TensorInfo<float, unsigned int>, PackedTensorAccessor32<c10::Half, 2, ...>, and
// CUTLASS-style TensorRef<T, Layout> follow that convention), or nothing.
std::optional<compare::DType> struct_element_dtype(std::string_view param_type);

// Typed spans (default tolerance of each type) for the pointer parameters of the captured
// launch; empty when the name has no C++ signature or its parameters do not line up with
// the captured parameter slots. `params` is the captured parameter buffer.
std::vector<TypedSpan> signature_spans(const format::Manifest& m, const std::vector<uint8_t>& params);

}  // namespace kerncap::replay
