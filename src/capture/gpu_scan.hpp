#pragma once
// Per-chunk signatures of device memory, computed by kerncap's own kernel in the
// application's context (at the target launch, after the synchronisation that is already
// there, on a stream of its own): 0 for an all-zero chunk, else a hash. Lets the snapshot
// skip zero chunks in BEFORE and unchanged chunks in AFTER without reading them to the host.
#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capture/closure.hpp"
#include "format/manifest.hpp"

namespace kerncap::capture {

// The device scan's granularity: the change-detection chunk, at least 64 KiB. Every
// signature crosses to the host and is kept there until AFTER; at 4 KiB that was 27 million
// of them for 105 GiB, and handling them on the host (not the GPU, which waited 1 ms) made
// the scan 0.14 s per 80 GB. Zero gaps under 64 KiB are stored anyway (the sparse format's
// smallest gap), so BEFORE stores the same bytes; AFTER copies changed 64 KiB chunks whole.
constexpr uint32_t scan_chunk(uint32_t chunk_bytes) {
  constexpr uint32_t kMin = 64u << 10;
  return chunk_bytes >= kMin ? chunk_bytes : (kMin + chunk_bytes - 1) / chunk_bytes * chunk_bytes;
}

class GpuScanner {
 public:
  // Null (and why) when the scan cannot run here: no embedded image, the module does not
  // load, or no device memory for the signatures. The snapshot then reads every byte.
  static std::unique_ptr<GpuScanner> create(std::string* why);
  ~GpuScanner();
  GpuScanner(const GpuScanner&) = delete;
  GpuScanner& operator=(const GpuScanner&) = delete;

  // Whether the kernel can read the region without any chance of a fault (which would end
  // the application's context): device memory of this context's device, 8-byte aligned,
  // and for cuMemMap'ed memory mapped readable for this device. Host-resident and managed
  // memory (a device read would migrate it) are read on the host as before.
  bool can_scan(format::MemKind kind, uint64_t address) const;
  // One signature per `chunk` bytes of [address, address + size).
  std::vector<uint64_t> scan(uint64_t address, uint64_t size, uint32_t chunk);

  // Seconds scan() spent waiting for the GPU (the rest of its time is the host's).
  double waited_s() const { return waited_s_; }

  // The tracked regions that pointers_in looks words up in.
  void set_ranges(const RangeIndex& index);
  // The regions (set_ranges' indices) that aligned 8-byte words of [address, address + size)
  // point into: the closure's step, at memory speed.
  std::vector<size_t> pointers_in(uint64_t address, uint64_t size);

 private:
  GpuScanner() = default;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUstream stream_ = nullptr;
  CUdevice device_ = 0;
  CUdeviceptr out_ = 0;
  uint64_t out_chunks_ = 0;  // signatures out_ holds
  // Scans signatures [first, first + n) of the region into out_ and returns n.
  uint64_t launch(uint64_t address, uint64_t size, uint32_t chunk, uint64_t first);
  uint64_t* pinned_[2] = {nullptr, nullptr};  // page-locked copies of out_, in turn (null: pageable)
  CUevent copied_[2] = {nullptr, nullptr};    // each buffer's copy ended
  double waited_s_ = 0;
  unsigned blocks_ = 1;         // the scan's grid: every SM busy
  static constexpr unsigned kWarpsPerBlock = 8;  // scan_kernel.cu's kThreads / 32
  CUfunction reach_ = nullptr;
  CUdeviceptr lo_ = 0, hi_ = 0, hit_ = 0;  // the range table (sorted) and its hit flags
  std::vector<size_t> order_;              // sorted position -> caller's index
};

}  // namespace kerncap::capture
