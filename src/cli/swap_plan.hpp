#pragma once
// `kerncap run --swap TARGET=IMAGE` resolved before the application starts (docs/swap.md):
// TARGET is a capture (OUT or OUT/capture: its exact mangled name and parameter layout) or
// a kernel name (the whole mangled name, or a pattern naming exactly one kernel of the
// image). The image's kernel that serves it is found as `validate --cubin` finds it
// (replay/variant_image.hpp: the name itself, or a file-local kernel's counterpart), and
// with a capture its parameter layout must be the captured kernel's: a variant that reads
// its parameters elsewhere is refused here, before anything runs.
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "extract/swap_run.hpp"

namespace kerncap::cli {

using extract::SwapPlan;

// Splits "TARGET=IMAGE" at its last '=' (Error(Usage) without one).
std::pair<std::string, std::string> split_swap_arg(const std::string& arg);
// A Triton capture's edited kernel_variant.py as a swap image: OUT/reproducer.py recompiles it
// with the application's Triton (and judges it on the captured launch), writing
// OUT/candidate.cubin and candidate.json; the candidate must keep the captured launch's
// geometry (grid, block, shared memory, cluster), since a swap keeps the application's own.
// Returns the cubin's path and the reproducer's verdict line in `verdict`. Throws Error(Input)
// saying what to do otherwise. `out` is the capture's OUT; `grid`/`block`/`shared`/`cluster`
// the captured launch's.
std::string compile_triton_variant(const std::filesystem::path& out, const std::filesystem::path& py,
                                   const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block,
                                   uint32_t shared, const std::array<uint32_t, 3>& cluster, std::string* verdict);

// Resolves one --swap; throws Error(Usage) / Error(Input) saying what is wrong.
SwapPlan plan_swap(const std::string& arg);
// The same without the parameters' element types (plan_swap adds them).
SwapPlan plan_swap_names(const std::string& arg);
// Every --swap, refusing one kernel named twice.
std::vector<SwapPlan> plan_swaps(const std::vector<std::string>& args);

}  // namespace kerncap::cli
