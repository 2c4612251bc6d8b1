#pragma once
// Which image `kerncap replay/validate OUT` use when no --cubin is given: a variant that is
// newer than what it is built from, else the captured image.
//   OUT/optimized.cubin  (C++ reproducer: `make recompile`)  vs kernel_variant.cu,
//                        kernel_instance.cu (when there is one) and src/**
//   OUT/candidate.cubin  (Triton reproducer: reproducer.py)  vs kernel_variant.py, and only
//                        when candidate.json keeps the captured grid, block and shared memory
#include <filesystem>
#include <optional>
#include <string>

namespace kerncap::reproducer {

struct VariantChoice {
  std::optional<std::filesystem::path> cubin;  // set: use this variant
  // "the variant OUT/optimized.cubin (newer than ...)" when chosen, else why not (empty when
  // there is no variant at all). Callers prefix "validating " / "replaying ".
  std::string note;
};

// `dir` is OUT or OUT/capture. Never throws.
VariantChoice fresh_variant(const std::filesystem::path& dir);

}  // namespace kerncap::reproducer
