#pragma once
// A variant image as the evaluation loop and `--cubin` take it: bytes read from a file or
// handed over by a caller (an autotuner that compiled them in memory), hashed, and checked on
// the host before any CUDA call — so a wrong file is refused with a clear message, and the
// loop can tell an image it already has loaded (or the captured image itself) by its hash.
// No CUDA here: testable without a GPU.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kerncap::replay {

struct VariantImage {
  std::vector<uint8_t> bytes;
  std::string desc;   // how messages name it: the path, or the caller's description
  uint64_t hash = 0;  // XXH3-64 of the bytes, as the manifest's image_hash
};

// XXH3-64 of an image (the hash the capture records for its own image).
uint64_t image_hash(std::span<const uint8_t> image);

// The image in file `path`. Error(Input): no such file, not a regular file, empty.
VariantImage read_variant_image(const std::filesystem::path& path);
// An image given as bytes; `desc` names it in messages. Error(Input) when empty.
VariantImage variant_image(std::vector<uint8_t> bytes, std::string desc);

// What to say when `image` (described as `desc`) lacks the captured kernel `mangled`:
// "... does not contain the captured kernel K; it has: ..." with the kernels it holds.
std::string missing_kernel_message(std::span<const uint8_t> image, const std::string& desc,
                                   const std::string& mangled);
// The name of the captured kernel `mangled` in a variant `image`: `mangled` itself, or, for a
// kernel local to its translation unit (an anonymous namespace: _GLOBAL__N__<hash>_<file>_<id>;
// a static kernel: __nv_static_<n>__<hash of the compile>_..._Z...), the one kernel of the
// image with the same name in another compile's scope — a recompiled variant of such a kernel
// never has the application's exact name. Refuses, before loading
// it, an image that is no CUDA code object (cubin, fatbin, PTX) or whose kernel names can be
// read and hold neither (Error(Input), missing_kernel_message). An image whose names cannot be
// read is left to the driver (`mangled`).
std::string kernel_in_variant(std::span<const uint8_t> image, const std::string& desc, const std::string& mangled);
// Of `names`, the one that is `mangled` in another compile's translation-unit scope
// (normalise_internal_name, or the same Itanium part behind an nvcc static prefix), when
// `mangled` is file-local and exactly one name matches. Pure.
std::optional<std::string> static_counterpart(const std::vector<std::string>& names, const std::string& mangled);

// The launch bounds (max threads a block, x*y*z) of kernel `mangled` in `image` for SM `sm`,
// or 0 when it has none or the image cannot be read.
int launch_bound(std::span<const uint8_t> image, int sm, const std::string& mangled);

// What to say when the launch's block (`threads` = x*y*z) exceeds the `max_threads` the loaded
// image's kernel admits (its launch bounds): the driver would refuse the launch
// with a bare CUDA_ERROR_INVALID_VALUE. `variant`: the image is a variant (else the captured
// image); `block_given`: the block came from --block, not from the capture.
std::string block_too_large_message(const std::string& desc, const std::string& kernel, uint64_t threads,
                                    int max_threads, bool variant, bool block_given);

}  // namespace kerncap::replay
