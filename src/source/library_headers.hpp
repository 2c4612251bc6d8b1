#pragma once
// Kernels that a unit instantiates from a header library outside the source tree: Thrust's
// and CUB's own kernels (thrust::reduce_by_key runs _kernel_agent<ReduceByKeyAgent...>,
// cub::DeviceScan runs DeviceScanKernel), defined in the CUDA toolkit's CCCL headers or in a
// CCCL checkout the build names with -I; CUTLASS's device kernels from its include/ given
// with -I (and any C++ kernel of a header library the build includes from outside the tree). The tree has no definition of them, but the unit that
// instantiates them does compile them, so the reproducer can recompile that unit, with an
// editable copy of the defining header found ahead of the library's own (docs/reproducer.md).
#include <filesystem>
#include <string>
#include <vector>

#include "source/compile_db.hpp"

namespace kerncap::source {

namespace fs = std::filesystem;

// Where to look, in order: the include directories outside `tree` that the database's CUDA
// commands name (-I, -isystem, ...), then each nvcc's toolkit (BIN/../include/cccl and
// BIN/../include; a bare "nvcc" is looked up on PATH). Canonical, existing, without repeats.
std::vector<fs::path> library_include_dirs(const CompileDb& db, const fs::path& tree);

// Does a definition with scopes `def` (as written: the library's namespace macros, such as
// THRUST_NAMESPACE_BEGIN, hide the outer namespaces) name the kernel with scopes `kernel` (as
// mangled: thrust::THRUST_300001_SM_900_NS::cuda_cub::core::detail)? Versioned inline
// namespaces are dropped from `kernel`; `def` must then be its tail, and what precedes the tail
// may only be the libraries' own namespaces (thrust, cub, cuda, std).
bool library_scopes_match(const std::vector<std::string>& kernel, const std::vector<std::string>& def);

}  // namespace kerncap::source
