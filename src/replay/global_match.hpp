#pragma once
// Binding the module globals of a captured kernel to those of a recompiled variant.
//
// nvcc gives internal-linkage names a prefix derived from the translation unit: the
// `_INTERNAL_<hash>_<len>_<file>_<hash>` scope it wraps around file-local entities and the
// `_GLOBAL__N__<hash>_<len>_<file>_<hash>` name of an anonymous namespace. The first hash
// changes with the file's contents and the file part with its name, so a variant compiled
// from an edited copy (kernel_variant.cu) names cuda::std::ignore, CUB's tag objects and
// every `static __device__` variable of its headers differently from the captured module.
// nvlink adds one more scope to file-local variables of -rdc translation units,
// `__nv_static_<n>__<hash>_<len>_<file>_<hash>_`, which a whole-program compile of the same
// unit (the variant) does not have: it is dropped.
// Pure string work: no CUDA, testable on fixture cubins.
#include <cstdint>
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

// One module global as binding needs it: its symbol, its size, and whether the kernel's
// code can reach it (cubin::globals_used; true when that cannot be told).
struct ModuleGlobal {
  std::string name;
  uint64_t size = 0;
  bool used = true;
};

// For each captured global, the variant global it binds to: the same name if the variant
// has it, else the variant global with the same normalised name. When a normalised name
// is shared by several globals on a side (an -rdc module of many translation units, each
// with its own cuda::std::ignore), the ones each kernel uses decide, then the sizes.
// nullopt: the captured kernel does not use it and the variant has no (single) global of
// that name; it gets scratch memory. Throws Error(Input), naming the globals on both
// sides, when a global the captured kernel uses is missing from the variant or cannot be
// told apart from others of the same normalised name.
std::vector<std::optional<std::string>> bind_globals(std::span<const ModuleGlobal> captured,
                                                     std::span<const ModuleGlobal> variant,
                                                     std::string_view variant_desc);

}  // namespace kerncap::replay
