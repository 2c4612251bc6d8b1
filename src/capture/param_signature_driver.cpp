#include "capture/param_signature_driver.hpp"

#include "capture/launch_info.hpp"
#include "capture/tool_scope.hpp"
#include "common/driver.hpp"

namespace kerncap::capture {

std::string DriverSignatureDriver::kernel_name(const void* function) {
  ToolScope scope;
  DriverLaunchQueries q;
  return q.kernel_name(static_cast<CUfunction>(const_cast<void*>(function)));
}

std::optional<std::vector<format::ParamSlot>> DriverSignatureDriver::param_layout(const void* function) {
  ToolScope scope;
  const Driver& d = driver();
  const ResolvedFunction r = resolve_function(static_cast<CUfunction>(const_cast<void*>(function)));
  // kerncap's CUPTI needs a CUDA 13 driver, which has both queries (CUDA 12.4 added them).
  if (r.was_kernel_handle ? !d.cuKernelGetParamInfo : !d.cuFuncGetParamInfo) return std::nullopt;
  return driver_param_layout(static_cast<CUfunction>(const_cast<void*>(function)), r.was_kernel_handle);
}

std::optional<SignatureDriver::Range> DriverSignatureDriver::allocation(uint64_t address) {
  ToolScope scope;
  const CUdeviceptr p = static_cast<CUdeviceptr>(address);
  // MEMORY_TYPE answers for device, managed and host-registered/mapped memory, and fails
  // (CUDA_ERROR_INVALID_VALUE, not sticky) for anything else.
  unsigned type = 0;
  if (KC_CU_TRY(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p)) != CUDA_SUCCESS || type == 0)
    return std::nullopt;
  CUdeviceptr start = 0;
  size_t size = 0;
  if (KC_CU_TRY(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p)) != CUDA_SUCCESS ||
      KC_CU_TRY(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p)) != CUDA_SUCCESS || size == 0)
    return Range{address, address + 1};
  return Range{static_cast<uint64_t>(start), static_cast<uint64_t>(start) + size};
}

}  // namespace kerncap::capture
