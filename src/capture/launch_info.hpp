#pragma once
// Decoding a launch from the arguments of whichever driver entry point made it, and
// reading what the kernel will see: parameter bytes and layout, launch and function
// attributes, the module that holds it.
#include <cuda.h>
#include <cupti.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/seams.hpp"
#include "format/manifest.hpp"

namespace kerncap::capture {

struct LaunchArgs {
  const char* api = "";
  CUfunction f = nullptr;  // may really be a CUkernel (runtime/library launches)
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_mem = 0;
  CUstream stream = nullptr;
  void** kernel_params = nullptr;
  void** extra = nullptr;
  const CUlaunchConfig* config = nullptr;  // cuLaunchKernelEx only
  bool cooperative = false;
};

// The driver's answers to LaunchQueries (the watcher's only driver calls).
class DriverLaunchQueries final : public LaunchQueries {
 public:
  std::string kernel_name(CUfunction f) override;
  bool stream_is_capturing(CUstream stream) override;
  int device_of(CUcontext ctx) override;  // launch_device.cpp
  const void* module_of(CUfunction f) override;

 private:
  std::mutex device_mu_;
  std::unordered_map<CUcontext, int> devices_;  // a context's device never changes
};

// The launch CBIDs kerncap watches.
const std::vector<CUpti_CallbackId>& launch_callback_ids();
bool is_launch_cbid(CUpti_CallbackId cbid);

// The driver callbacks profile mode's sampled timing enables: the launches, graph launches
// (they end the sampling), module/library unloads (handles may be reused) and the
// stream-capture calls (a launch into a capturing stream is not counted).
std::vector<CUpti_CallbackId> profile_callback_ids();

// The stream-capture calls (OpenCaptures follows them at their exits).
enum class StreamCaptureCall { None, Begin, End };
StreamCaptureCall stream_capture_call(CUpti_CallbackId cbid);
const std::vector<CUpti_CallbackId>& stream_capture_callback_ids();
// At a capture call's exit: begins or ends one in `open` when the call took effect (an
// invalidated capture is still ended by its cuStreamEndCapture). False for other calls.
class OpenCaptures;
bool follow_stream_capture(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, OpenCaptures& open);
// Returns false for ids that are not kernel launches.
bool decode_launch(CUpti_CallbackId cbid, const void* params, LaunchArgs* out);

// The executable function and its module for a handle that may be a CUkernel.
struct ResolvedFunction {
  CUfunction function = nullptr;
  CUmodule module = nullptr;
  bool was_kernel_handle = false;
};
ResolvedFunction resolve_function(CUfunction f);

// Parameter layout from the driver (cuFuncGetParamInfo / cuKernelGetParamInfo); empty
// when the driver cannot tell (the caller then falls back to the image's .nv.info).
std::vector<format::ParamSlot> driver_param_layout(CUfunction f, bool kernel_handle);

// Copies the parameter bytes into one buffer laid out as the kernel sees it.
// Returns false with `why` when they cannot be read.
bool pack_params(const LaunchArgs& a, const std::vector<format::ParamSlot>& slots, std::vector<uint8_t>* out,
                 std::string* source, std::string* why);

// Fills launch/function attribute fields of the manifest.
void describe_attributes(const LaunchArgs& a, CUfunction fn, format::Manifest* m);

// The function names a module holds (cuModuleEnumerateFunctions), for choosing among
// images that share a kernel name. Empty when unavailable.
std::vector<std::string> module_function_names(CUmodule mod);

}  // namespace kerncap::capture
