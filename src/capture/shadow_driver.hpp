#pragma once
// ShadowDriver on the CUDA driver: the allocation of an address from cuPointerGetAttribute,
// saved and kept bytes in device buffers of ours (device-to-device copies: a check costs
// about three passes over what the launch can reach), the variant launched on a stream of ours.
#include <memory>
#include <vector>

#include "capture/gpu_scan.hpp"

#include "capture/shadow.hpp"

namespace kerncap::capture {

class DriverShadowDriver final : public ShadowDriver {
 public:
  std::optional<std::pair<uint64_t, uint64_t>> allocation_of(uint64_t address) override;
  bool run_variant(CUfunction variant, const LaunchArgs& launch, const std::vector<ShadowRegion>& regions,
                   std::string* why) override;
  bool finish_original(std::string* why) override;
  bool read(size_t i, uint64_t offset, uint64_t n, uint8_t* expected, uint8_t* actual) override;
  void release() override;
  std::vector<std::pair<uint64_t, uint64_t>> may_differ(size_t i, uint64_t size) override;

 private:
  struct Kept {
    ShadowRegion region;
    CUdeviceptr saved = 0, variant = 0;
  };
  static thread_local std::vector<Kept> kept_;  // the check pending on this thread
  // The snapshot's device scan, reused: per-chunk signatures of both results, so that only
  // chunks that differ cross to the host. Null when it cannot run (then everything does).
  static thread_local std::unique_ptr<GpuScanner> scanner_;
  static thread_local bool scanner_tried_;
};

}  // namespace kerncap::capture
