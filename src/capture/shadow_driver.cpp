#include "capture/shadow_driver.hpp"

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/launch_dims.hpp"

namespace kerncap::capture {

thread_local std::vector<DriverShadowDriver::Kept> DriverShadowDriver::kept_;
thread_local std::unique_ptr<GpuScanner> DriverShadowDriver::scanner_;
thread_local bool DriverShadowDriver::scanner_tried_ = false;

namespace {
std::string cu_text(CUresult r) {
  const char* name = nullptr;
  if (driver().cuGetErrorName) driver().cuGetErrorName(r, &name);
  return name ? name : fmt::format("CUresult {}", static_cast<int>(r));
}
// A stream of ours per thread (created once; never destroyed: the process may be exiting).
CUstream our_stream() {
  thread_local CUstream s = nullptr;
  if (!s) KC_CU_TRY(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  return s;
}
}  // namespace

std::optional<std::pair<uint64_t, uint64_t>> DriverShadowDriver::allocation_of(uint64_t address) {
  CUmemorytype type{};
  if (KC_CU_TRY(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, static_cast<CUdeviceptr>(address))) !=
          CUDA_SUCCESS ||
      type != CU_MEMORYTYPE_DEVICE)
    return std::nullopt;
  CUdeviceptr base = 0;
  size_t size = 0;
  if (KC_CU_TRY(cuMemGetAddressRange(&base, &size, static_cast<CUdeviceptr>(address))) != CUDA_SUCCESS || !size)
    return std::nullopt;
  return std::make_pair(static_cast<uint64_t>(base), static_cast<uint64_t>(size));
}

bool DriverShadowDriver::run_variant(CUfunction variant, const LaunchArgs& a, const std::vector<ShadowRegion>& regions,
                                     std::string* why) {
  release();
  CUresult r = KC_CU_TRY(cuCtxSynchronize());
  if (r != CUDA_SUCCESS) {
    *why = "the application's earlier work failed (" + cu_text(r) + ")";
    return false;
  }
  const CUstream s = our_stream();
  for (const auto& reg : regions) {
    Kept k;
    k.region = reg;
    if ((r = KC_CU_TRY(cuMemAlloc(&k.saved, reg.size))) != CUDA_SUCCESS ||
        (r = KC_CU_TRY(cuMemAlloc(&k.variant, reg.size))) != CUDA_SUCCESS) {
      if (k.saved) KC_CU_TRY(cuMemFree(k.saved));
      release();
      *why = fmt::format("no device memory for a copy of {} bytes ({})", reg.size, cu_text(r));
      return false;
    }
    kept_.push_back(k);
    KC_CU_TRY(cuMemcpyAsync(k.saved, static_cast<CUdeviceptr>(reg.base), reg.size, s));
  }
  // The variant, as the application launched its kernel, on our stream.
  if (a.config) {
    CUlaunchConfig c = *a.config;
    c.hStream = s;
    r = KC_CU_TRY(cuLaunchKernelEx(&c, variant, a.kernel_params, a.extra));
  } else if (a.cooperative) {
    CUlaunchAttribute coop{};
    coop.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    coop.value.cooperative = 1;
    CUlaunchConfig c{};
    set_launch_dims(c, a.grid, a.block);
    c.sharedMemBytes = a.shared_mem;
    c.hStream = s;
    c.attrs = &coop;
    c.numAttrs = 1;
    r = KC_CU_TRY(cuLaunchKernelEx(&c, variant, a.kernel_params, a.extra));
  } else {
    r = KC_CU_TRY(cuLaunchKernel(variant, a.grid[0], a.grid[1], a.grid[2], a.block[0], a.block[1], a.block[2],
                                 a.shared_mem, s, a.kernel_params, a.extra));
  }
  const bool launched = r == CUDA_SUCCESS;
  if (!launched) *why = "the variant could not be launched (" + cu_text(r) + ")";
  if (launched && (r = KC_CU_TRY(cuStreamSynchronize(s))) != CUDA_SUCCESS) {
    *why = "the variant failed on the GPU (" + cu_text(r) + ")";
    return false;  // a sticky error: nothing more can be done in this context
  }
  for (const auto& k : kept_) {
    if (launched) KC_CU_TRY(cuMemcpyAsync(k.variant, static_cast<CUdeviceptr>(k.region.base), k.region.size, s));
    KC_CU_TRY(cuMemcpyAsync(static_cast<CUdeviceptr>(k.region.base), k.saved, k.region.size, s));
  }
  r = KC_CU_TRY(cuStreamSynchronize(s));
  if (r != CUDA_SUCCESS) {
    *why = "restoring the application's memory failed (" + cu_text(r) + ")";
    return false;
  }
  if (!launched) release();
  return launched;
}

bool DriverShadowDriver::finish_original(std::string* why) {
  const CUresult r = KC_CU_TRY(cuCtxSynchronize());
  if (r != CUDA_SUCCESS) *why = "the application's launch failed (" + cu_text(r) + ")";
  return r == CUDA_SUCCESS;
}

bool DriverShadowDriver::read(size_t i, uint64_t offset, uint64_t n, uint8_t* expected, uint8_t* actual) {
  if (i >= kept_.size() || offset + n > kept_[i].region.size) return false;
  const Kept& k = kept_[i];
  return KC_CU_TRY(cuMemcpyDtoH(expected, static_cast<CUdeviceptr>(k.region.base + offset), n)) == CUDA_SUCCESS &&
         KC_CU_TRY(cuMemcpyDtoH(actual, k.variant + offset, n)) == CUDA_SUCCESS;
}

std::vector<std::pair<uint64_t, uint64_t>> DriverShadowDriver::may_differ(size_t i, uint64_t size) {
  const std::vector<std::pair<uint64_t, uint64_t>> all = {{0, size}};
  if (i >= kept_.size() || size != kept_[i].region.size) return all;
  if (!scanner_tried_) {
    scanner_tried_ = true;
    std::string why;
    scanner_ = GpuScanner::create(&why);
  }
  if (!scanner_) return all;
  constexpr uint32_t kChunk = 64u << 10;
  try {
    const Kept& k = kept_[i];
    const std::vector<uint64_t> a = scanner_->scan(k.region.base, size, kChunk);
    const std::vector<uint64_t> b = scanner_->scan(k.variant, size, kChunk);
    if (a.size() != b.size()) return all;
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (size_t c = 0; c < a.size(); ++c) {
      // The last chunk always: its bytes past the last aligned word are not hashed.
      if (a[c] == b[c] && c + 1 < a.size()) continue;
      const uint64_t off = c * uint64_t{kChunk}, n = std::min<uint64_t>(kChunk, size - off);
      if (!out.empty() && out.back().first + out.back().second == off) out.back().second += n;
      else out.emplace_back(off, n);
    }
    return out;
  } catch (...) {
    return all;  // the scan failed: compare every byte on the host
  }
}

void DriverShadowDriver::release() {
  for (const auto& k : kept_) {
    if (k.saved) KC_CU_TRY(cuMemFree(k.saved));
    if (k.variant) KC_CU_TRY(cuMemFree(k.variant));
  }
  kept_.clear();
}

}  // namespace kerncap::capture
