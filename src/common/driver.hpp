#pragma once
// The CUDA driver API, loaded at run time. Nothing in kerncap links libcuda directly, so
// the CLI starts (and reports "no NVIDIA driver") on machines without a GPU, and tests run.
// Entry points come from cuGetProcAddress for the toolkit's CUDA_VERSION, which picks the
// right _v2/_v3 ABI for every name.
#include <cuda.h>

#include <string>

namespace kerncap {

#define KERNCAP_DRIVER_FUNCS(X)                                                              \
  X(cuInit) X(cuGetErrorName) X(cuGetErrorString) X(cuDriverGetVersion) X(cuDeviceGet)      \
  X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceGetUuid)         \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxReset)            \
  X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize)               \
  X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemCreate) X(cuMemRelease) X(cuMemMap)     \
  X(cuMemUnmap) X(cuMemSetAccess) X(cuMemGetAllocationGranularity) X(cuMemcpyHtoD)          \
  X(cuMemcpyDtoH) X(cuMemcpy) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemHostAlloc)   \
  X(cuMemFreeHost) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD8) X(cuMemGetInfo)                 \
  X(cuMemGetAddressRange) X(cuPointerGetAttribute) X(cuModuleLoadData) X(cuModuleUnload)    \
  X(cuModuleGetFunction) X(cuModuleGetGlobal) X(cuFuncSetAttribute) X(cuFuncGetAttribute)   \
  X(cuFuncGetParamInfo) X(cuFuncGetModule) X(cuFuncGetName) X(cuFuncSetCacheConfig)         \
  X(cuKernelGetParamInfo) X(cuKernelGetFunction) X(cuKernelGetAttribute) X(cuKernelGetName) \
  X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuStreamCreate) X(cuStreamDestroy)                \
  X(cuStreamSynchronize) X(cuStreamIsCapturing) X(cuEventCreate) X(cuEventRecord)           \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy) X(cuModuleGetFunctionCount)       \
  X(cuModuleEnumerateFunctions) X(cuMemHostGetDevicePointer) X(cuCtxGetId) X(cuCtxPushCurrent)   \
  X(cuCtxPopCurrent) X(cuMemAllocHost) X(cuMemcpyAsync) X(cuMemsetD8Async) X(cuDeviceGetPCIBusId) \
  X(cuMemGetAccess) X(cuArray3DCreate) X(cuArrayDestroy) X(cuMipmappedArrayCreate)               \
  X(cuMipmappedArrayGetLevel) X(cuMipmappedArrayDestroy) X(cuMemcpy3D) X(cuTexObjectCreate)       \
  X(cuTexObjectDestroy) X(cuSurfObjectCreate) X(cuSurfObjectDestroy) X(cuMemsetD16Async) X(cuMemsetD32Async) \
  X(cuMemcpyDtoDAsync) X(cuStreamWaitEvent)

struct Driver {
#define KERNCAP_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  KERNCAP_DRIVER_FUNCS(KERNCAP_DRIVER_MEMBER)
#undef KERNCAP_DRIVER_MEMBER
};

// Loads libcuda.so.1 on first use. Throws Error(Device) with an actionable message when
// there is no driver; entry points the driver lacks stay null (callers check).
const Driver& driver();
// Non-throwing probe: empty string when the driver loaded, else why not.
std::string driver_load_error();
// Names of entry points this driver lacks (space-separated; empty when all resolved).
std::string driver_missing_entries();

// "cuMemMap(...) failed: CUDA_ERROR_INVALID_VALUE (invalid argument) at replay/va.cpp:42"
std::string cu_error_text(CUresult r, const char* call, const char* file, int line);
[[noreturn]] void cu_fail(CUresult r, const char* call, const char* file, int line);

}  // namespace kerncap

// The one checking macro for driver calls: KC_CU(cuMemMap(ptr, size, 0, h, 0)).
// The call goes through the loaded table; the text of the call lands in the error.
#define KC_CU(call)                                                                  \
  do {                                                                               \
    CUresult kc_cu_result_ = ::kerncap::driver().call;                               \
    if (kc_cu_result_ != CUDA_SUCCESS)                                               \
      ::kerncap::cu_fail(kc_cu_result_, #call, __FILE__, __LINE__);                  \
  } while (0)

// For calls whose failure is an answer, not an error (probing): returns the CUresult.
#define KC_CU_TRY(call) (::kerncap::driver().call)
