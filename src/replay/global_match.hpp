#pragma once
// Binding the module globals of a captured kernel to those of a recompiled variant.
//
// nvcc gives internal-linkage names a prefix derived from the translation unit: the
// `_INTERNAL_<hash>_<len>_<file>_<hash>` scope it wraps around file-local entities and the
// `_GLOBAL__N__<hash>_<len>_<file>_<hash>` name of an anonymous namespace. The first hash
// changes with the file's contents and the file part with its name, so a variant compiled
// from an edited copy (kernel_variant.cu) names cuda::std::ignore, CUB's tag objects and
// every `static __device__` variable of its headers differently from the captured module.
// Pure string work: no CUDA, testable on fixture cubins.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kerncap::replay {

// The name with each translation-unit scope replaced by a fixed token ("10_INTERNAL_",
// "12_GLOBAL__N__"); everything else is kept, so different variables stay different.
// Names without such a scope come back unchanged.
std::string normalise_internal_name(std::string_view mangled);

// For each captured global, the variant global it binds to: the same name if the variant
// has it, else the one variant global whose normalised name is the same (when exactly one
// captured global and one variant global share that normalised name). nullopt: no variant
// global has that normalised name, so the variant's code cannot use it. Throws
// Error(Input) naming both lists when a normalised name is shared by several globals on
// either side (which one is which cannot be told from names).
std::vector<std::optional<std::string>> bind_globals(std::span<const std::string> captured,
                                                     std::span<const std::string> variant,
                                                     std::string_view variant_desc);

}  // namespace kerncap::replay
