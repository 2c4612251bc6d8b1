#include "capture/launch_info.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "capture/open_captures.hpp"
#include "common/driver.hpp"

namespace kerncap::capture {

const std::vector<CUpti_CallbackId>& launch_callback_ids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
  };
  return ids;
}

bool is_launch_cbid(CUpti_CallbackId cbid) {
  // Asked at every launch's entry and exit: a switch, not a search (the list above must agree;
  // unit tested).
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return true;
    default:
      return false;
  }
}

StreamCaptureCall stream_capture_call(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz:
      return StreamCaptureCall::Begin;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz:
      return StreamCaptureCall::End;
    default:
      return StreamCaptureCall::None;
  }
}

const std::vector<CUpti_CallbackId>& stream_capture_callback_ids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,        CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,     CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,          CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
  };
  return ids;
}

std::vector<CUpti_CallbackId> profile_callback_ids() {
  std::vector<CUpti_CallbackId> ids = launch_callback_ids();
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
                              CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload})
    ids.push_back(id);
  for (CUpti_CallbackId id : stream_capture_callback_ids()) ids.push_back(id);
  return ids;
}

bool follow_stream_capture(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, OpenCaptures& open) {
  const StreamCaptureCall c = stream_capture_call(cbid);
  if (c == StreamCaptureCall::None) return false;
  if (cb->callbackSite != CUPTI_API_EXIT || !cb->functionReturnValue) return true;
  const CUresult r = *static_cast<const CUresult*>(cb->functionReturnValue);
  if (c == StreamCaptureCall::Begin && r == CUDA_SUCCESS) open.begin();
  if (c == StreamCaptureCall::End && (r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)) open.end();
  return true;
}

std::string DriverLaunchQueries::kernel_name(CUfunction f) {
  const char* n = nullptr;
  // Runtime launches pass a CUkernel where a CUfunction is expected: cuFuncGetName fails
  // cleanly on one, and cuKernelGetName answers instead.
  if (KC_CU_TRY(cuFuncGetName(&n, f)) != CUDA_SUCCESS) KC_CU_TRY(cuKernelGetName(&n, reinterpret_cast<CUkernel>(f)));
  return n ? n : "";
}

bool DriverLaunchQueries::stream_is_capturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  // A stream the driver cannot answer for is treated as not capturing, as before a query existed.
  return KC_CU_TRY(cuStreamIsCapturing(stream, &status)) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

namespace {
// cuLaunchKernel and cuLaunchCooperativeKernel share these argument names.
template <typename P>
void decode_classic(const P& p, const char* api, LaunchArgs* out) {
  out->api = api;
  out->f = p.f;
  out->grid = {p.gridDimX, p.gridDimY, p.gridDimZ};
  out->block = {p.blockDimX, p.blockDimY, p.blockDimZ};
  out->shared_mem = p.sharedMemBytes;
  out->stream = p.hStream;
  out->kernel_params = p.kernelParams;
}
}  // namespace

bool decode_launch(CUpti_CallbackId cbid, const void* params, LaunchArgs* out) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto& p = *static_cast<const cuLaunchKernel_params*>(params);
      decode_classic(p, "cuLaunchKernel", out);
      out->extra = p.extra;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      decode_classic(*static_cast<const cuLaunchCooperativeKernel_params*>(params), "cuLaunchCooperativeKernel", out);
      out->cooperative = true;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto& p = *static_cast<const cuLaunchKernelEx_params*>(params);
      if (!p.config) return false;
      const CUlaunchConfig& c = *p.config;
      out->api = "cuLaunchKernelEx";
      out->f = p.f;
      out->grid = {c.gridDimX, c.gridDimY, c.gridDimZ};
      out->block = {c.blockDimX, c.blockDimY, c.blockDimZ};
      out->shared_mem = c.sharedMemBytes;
      out->stream = c.hStream;
      out->kernel_params = p.kernelParams;
      out->extra = p.extra;
      out->config = p.config;
      for (unsigned i = 0; i < c.numAttrs; ++i)
        if (c.attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && c.attrs[i].value.cooperative) out->cooperative = true;
      return true;
    }
    default:
      return false;
  }
}

ResolvedFunction resolve_function(CUfunction f) {
  const Driver& d = driver();
  ResolvedFunction r;
  CUmodule mod = nullptr;
  // Runtime launches pass a CUkernel where a CUfunction is expected. cuFuncGetName is
  // known to fail cleanly on a CUkernel (other function queries are not), so it decides.
  const char* name = nullptr;
  if (d.cuFuncGetName && KC_CU_TRY(cuFuncGetName(&name, f)) == CUDA_SUCCESS) {
    r.function = f;
    if (d.cuFuncGetModule && KC_CU_TRY(cuFuncGetModule(&mod, f)) == CUDA_SUCCESS) r.module = mod;
    return r;
  }
  CUfunction fn = nullptr;
  r.was_kernel_handle = true;
  if (d.cuKernelGetFunction && KC_CU_TRY(cuKernelGetFunction(&fn, reinterpret_cast<CUkernel>(f))) == CUDA_SUCCESS) {
    r.function = fn;
    if (d.cuFuncGetModule && KC_CU_TRY(cuFuncGetModule(&mod, fn)) == CUDA_SUCCESS) r.module = mod;
  }
  return r;
}

const void* DriverLaunchQueries::module_of(CUfunction f) { return resolve_function(f).module; }

std::vector<format::ParamSlot> driver_param_layout(CUfunction f, bool kernel_handle) {
  const Driver& d = driver();
  std::vector<format::ParamSlot> slots;
  for (size_t i = 0; i < 4096; ++i) {
    size_t off = 0, size = 0;
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    if (kernel_handle && d.cuKernelGetParamInfo)
      r = KC_CU_TRY(cuKernelGetParamInfo(reinterpret_cast<CUkernel>(f), i, &off, &size));
    else if (!kernel_handle && d.cuFuncGetParamInfo)
      r = KC_CU_TRY(cuFuncGetParamInfo(f, i, &off, &size));
    if (r != CUDA_SUCCESS) break;  // past the last parameter
    slots.push_back({static_cast<uint32_t>(off), static_cast<uint32_t>(size)});
  }
  return slots;
}

bool pack_params(const LaunchArgs& a, const std::vector<format::ParamSlot>& slots, std::vector<uint8_t>* out,
                 std::string* source, std::string* why) {
  out->clear();
  if (a.kernel_params) {
    *source = "kernelParams";
    uint64_t total = 0;
    for (const auto& s : slots) total = std::max<uint64_t>(total, uint64_t{s.offset} + s.size);
    out->assign(total, 0);
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!a.kernel_params[i]) {
        *why = fmt::format("kernelParams[{}] is null", i);
        return false;
      }
      std::memcpy(out->data() + slots[i].offset, a.kernel_params[i], slots[i].size);
    }
    return true;
  }
  if (a.extra) {
    *source = "extra";
    const void* buf = nullptr;
    size_t size = 0;
    for (void** e = a.extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
      if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = e[1];
      else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<const size_t*>(e[1]);
      else {
        *why = fmt::format("unknown 'extra' launch option {}", e[0]);
        return false;
      }
    }
    if (size && !buf) {
      *why = "'extra' gives a size but no buffer";
      return false;
    }
    out->assign(static_cast<const uint8_t*>(buf), static_cast<const uint8_t*>(buf) + size);
    // A buffer shorter than the declared parameters is legal: NCCL declares a 4 KiB argument
    // struct and passes only the bytes it filled. The kernel sees zeros past them (what the
    // replay will pass, the declared size, must hold the whole layout).
    uint64_t declared = 0;
    for (const auto& s : slots) declared = std::max<uint64_t>(declared, uint64_t{s.offset} + s.size);
    if (declared > out->size()) out->resize(declared, 0);
    return true;
  }
  *source = "none";
  if (!slots.empty()) {
    *why = "the kernel takes parameters but the launch passed neither kernelParams nor extra";
    return false;
  }
  return true;
}

namespace {

const char* launch_attr_name(int id) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: return "access_policy_window";
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: return "cooperative";
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: return "cluster_dimension";
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: return "cluster_scheduling_policy";
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: return "programmatic_stream_serialization";
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT: return "programmatic_event";
    case CU_LAUNCH_ATTRIBUTE_PRIORITY: return "priority";
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: return "mem_sync_domain_map";
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: return "mem_sync_domain";
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION: return "preferred_cluster_dimension";
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: return "launch_completion_event";
    case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE: return "device_updatable_kernel_node";
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: return "preferred_shared_memory_carveout";
    default: return "other";
  }
}

}  // namespace

void describe_attributes(const LaunchArgs& a, CUfunction fn, format::Manifest* m) {
  m->launch_api = a.api;
  m->grid = a.grid;
  m->block = a.block;
  m->shared_mem_bytes = a.shared_mem;
  m->cooperative = a.cooperative;
  if (a.config) {
    for (unsigned i = 0; i < a.config->numAttrs; ++i) {
      const CUlaunchAttribute& at = a.config->attrs[i];
      format::LaunchAttr la;
      la.id = static_cast<int>(at.id);
      la.name = launch_attr_name(la.id);
      const auto* raw = reinterpret_cast<const uint8_t*>(&at.value);
      la.raw.assign(raw, raw + sizeof(at.value));
      if (at.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        m->cluster = {at.value.clusterDim.x, at.value.clusterDim.y, at.value.clusterDim.z};
      m->launch_attrs.push_back(std::move(la));
    }
  }
  if (!fn) return;
  const Driver& d = driver();
  const std::pair<CUfunction_attribute, const char*> attrs[] = {
      {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "max_dynamic_shared_size_bytes"},
      {CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, "preferred_shared_memory_carveout"},
      {CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, "non_portable_cluster_size_allowed"},
      {CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, "cluster_scheduling_policy_preference"},
      {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, "required_cluster_width"},
      {CU_FUNC_ATTRIBUTE_NUM_REGS, "num_regs"},
      {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "shared_size_bytes"},
      {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "local_size_bytes"},
  };
  for (const auto& [id, name] : attrs) {
    int v = 0;
    if (d.cuFuncGetAttribute && KC_CU_TRY(cuFuncGetAttribute(&v, id, fn)) == CUDA_SUCCESS)
      m->func_attrs.push_back({static_cast<int>(id), name, v});
  }
}

std::vector<std::string> module_function_names(CUmodule mod) {
  const Driver& d = driver();
  std::vector<std::string> names;
  unsigned count = 0;
  if (!mod || !d.cuModuleGetFunctionCount || !d.cuModuleEnumerateFunctions ||
      KC_CU_TRY(cuModuleGetFunctionCount(&count, mod)) != CUDA_SUCCESS || count == 0)
    return names;
  std::vector<CUfunction> fns(count);
  if (KC_CU_TRY(cuModuleEnumerateFunctions(fns.data(), count, mod)) != CUDA_SUCCESS) return names;
  for (CUfunction f : fns) {
    const char* n = nullptr;
    if (d.cuFuncGetName && KC_CU_TRY(cuFuncGetName(&n, f)) == CUDA_SUCCESS && n) names.emplace_back(n);
  }
  return names;
}

}  // namespace kerncap::capture
