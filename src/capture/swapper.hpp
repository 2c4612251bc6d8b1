#pragma once
// Swap (`kerncap run --swap`, docs/swap.md): every launch of a kernel is served by a variant
// image inside the running application. At a launch's API entry CUPTI hands us the call's
// own argument block, and the driver launches whatever function that block names when the
// callback returns (measured on the H200 for runtime <<<>>>, cuLaunchKernel,
// cuLaunchKernelEx, cudaLaunchKernelEx, stream-captured and explicitly built graphs): so the
// swap is one pointer written into that block, nothing launched on the application's streams
// and nothing the application can read back. Graph kernel nodes built by hand are swapped
// where their parameters enter the driver (add / set-params calls): the block then points to
// our own copy of the node parameters, the application's struct is never written.
//
// The decisions (which handles are the kernel, whether the layouts agree, the counts) are
// here and unit tested with a fake SwapDriver; the driver work is in swap_driver.cpp.
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/shadow.hpp"
#include "format/manifest.hpp"
#include "format/swaps.hpp"

namespace kerncap::capture {

class SwapDriver {
 public:
  virtual ~SwapDriver() = default;
  // The mangled name behind a launch handle (a CUfunction, or a CUkernel passed as one).
  virtual std::string name_of(CUfunction f) = 0;
  // Its parameter layout (empty when the driver cannot tell).
  virtual std::vector<format::ParamSlot> layout_of(CUfunction f) = 0;
  // The variant's function in context `ctx` (its image loaded there once); null and `why`
  // when the image cannot be loaded or lacks the entry.
  virtual CUfunction variant_function(const format::SwapSpec& s, CUcontext ctx, std::string* why) = 0;
  virtual std::vector<format::ParamSlot> variant_layout(CUfunction v) = 0;
  // Lets the variant take `shared_mem` dynamic shared bytes (the application raised its own
  // kernel's limit with cuFuncSetAttribute; the variant's is its own). False: it cannot.
  virtual bool allow_shared(CUfunction v, uint32_t shared_mem) = 0;
  // The context current on this thread (graph nodes name none).
  virtual CUcontext current_context() = 0;
  // Whether a launch on `stream` is being recorded into a graph (it runs later: not checked).
  virtual bool stream_capturing(CUstream stream) = 0;
};

// "" when the layouts agree, else why not ("parameter 2 is 8 bytes at offset 16 in the
// application's kernel, 4 bytes at offset 16 in the variant"). An unknown layout (empty)
// agrees: the launcher checked the image's against the capture's where it had one.
std::string layout_mismatch(const std::vector<format::ParamSlot>& app, const std::vector<format::ParamSlot>& variant);

class Swapper {
 public:
  // `shadow`: the device side of shadow checking (needed when a spec has shadow_every).
  Swapper(std::vector<format::SwapSpec> specs, SwapDriver& driver, ShadowDriver* shadow = nullptr);
  // The driver callbacks to enable: the launches and the graph kernel-node calls.
  static std::vector<CUpti_CallbackId> callback_ids();
  // At a driver API entry: writes the variant into a launch's argument block, or points a
  // graph call at a copy of its node parameters that names the variant; a shadowed kernel's
  // checked launch runs the variant on the side here and is compared at its API exit.
  // True when it swapped. Never throws (a failure leaves the call as the application made it).
  bool on_callback(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) noexcept;
  format::SwapReport report(int64_t pid) const;

 private:
  struct Kernel {
    format::SwapSpec spec;
    std::atomic<uint64_t> launches{0}, swapped{0}, graph_nodes{0};
    std::mutex mu;                              // guards the fields below
    std::map<CUcontext, CUfunction> variants;   // loaded per context
    std::string refused;                        // first reason a launch was left alone
    // Shadow checking (under mu but the atomics).
    std::atomic<uint64_t> shadow_checked{0}, shadow_skipped{0}, shadow_failed{0};
    std::string shadow_skip_reason;
    double shadow_seconds = 0;
    nlohmann::json first_failure;
  };
  // The launch being checked on this thread, between its entry and its exit.
  struct Pending {
    int kernel = -1;
    uint64_t correlation = 0, index = 0;
    LaunchArgs launch;
    std::vector<ShadowRegion> regions;
    double seconds = 0;
  };
  static thread_local Pending* t_pending_;
  void shadow_before(int k, CUpti_CallbackId cbid, const CUpti_CallbackData* cb, const LaunchArgs& a, uint64_t index);
  void shadow_after(const CUpti_CallbackData* cb);
  void shadow_skip(Kernel& k, const std::string& why);
  // -1: not a kernel we swap.
  int kernel_index(CUfunction f);
  // The variant for a launch of kernels_[k] through `f` in `ctx` taking `shared_mem`; null
  // (reason recorded) when it must run as the application made it.
  CUfunction variant_for(int k, CUfunction f, CUcontext ctx, uint32_t shared_mem);
  bool swap_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  // A module or library unloaded (its handles may be reused for other kernels), or a context
  // destroyed (with the variants loaded in it): what was learnt about handles is forgotten.
  void forget_handles();
  void forget_contexts();
  bool swap_node(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  void refuse(Kernel& k, const std::string& why);

  SwapDriver& driver_;
  ShadowDriver* shadow_ = nullptr;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::shared_mutex handles_mu_;
  // Launch handle -> kernel index (-1: not ours) and, once a launch through it in `ctx` passed
  // every check, the variant: the per-launch path is then one shared lock and one lookup.
  struct Handle {
    int index = -1;
    CUcontext ctx = nullptr;
    CUfunction variant = nullptr;
  };
  std::unordered_map<CUfunction, Handle> handles_;
  Handle handle_of(CUfunction f);
  std::mutex layouts_mu_;
  std::map<std::pair<CUfunction, CUfunction>, std::string> layouts_;  // (app, variant) -> mismatch
};

}  // namespace kerncap::capture
