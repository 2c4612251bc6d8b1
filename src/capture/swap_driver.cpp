#include "capture/swap_driver.hpp"

#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "capture/launch_info.hpp"
#include "common/driver.hpp"

namespace kerncap::capture {

namespace {
constexpr std::streamsize kMaxImageBytes = std::streamsize{1} << 30;

std::string cu_text(CUresult r) {
  const char* name = nullptr;
  if (driver().cuGetErrorName) driver().cuGetErrorName(r, &name);
  return name ? name : fmt::format("CUresult {}", static_cast<int>(r));
}
}  // namespace

std::string DriverSwapDriver::name_of(CUfunction f) {
  DriverLaunchQueries q;
  return q.kernel_name(f);
}

std::vector<format::ParamSlot> DriverSwapDriver::layout_of(CUfunction f) {
  const ResolvedFunction r = resolve_function(f);
  return driver_param_layout(f, r.was_kernel_handle);
}

CUfunction DriverSwapDriver::variant_function(const format::SwapSpec& s, CUcontext ctx, std::string* why) {
  std::lock_guard lk(mu_);
  auto it = images_.find(s.image);
  if (it == images_.end()) {
    std::ifstream in(s.image, std::ios::binary);
    std::vector<char> bytes;
    if (in) {
      in.seekg(0, std::ios::end);
      const std::streamsize size = in.tellg();
      in.seekg(0);
      if (size > 0 && size <= kMaxImageBytes) {
        bytes.resize(static_cast<size_t>(size));
        in.read(bytes.data(), size);
        if (in.gcount() != size) bytes.clear();
      }
    }
    if (bytes.empty()) {
      *why = fmt::format("cannot read the variant image {}", s.image);
      return nullptr;
    }
    bytes.push_back('\0');  // PTX text must end in NUL; cubins ignore the byte
    it = images_.emplace(s.image, std::move(bytes)).first;
  }
  // Graph nodes may name a context other than the thread's.
  CUcontext current = nullptr;
  KC_CU_TRY(cuCtxGetCurrent(&current));
  const bool push = ctx && ctx != current;
  if (push && KC_CU_TRY(cuCtxPushCurrent(ctx)) != CUDA_SUCCESS) {
    *why = "cannot make the launch's context current to load the variant";
    return nullptr;
  }
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  CUresult r = KC_CU_TRY(cuModuleLoadData(&mod, it->second.data()));
  if (r != CUDA_SUCCESS) {
    *why = fmt::format("the driver refused the variant image {} ({})", s.image, cu_text(r));
  } else if ((r = KC_CU_TRY(cuModuleGetFunction(&fn, mod, s.entry.c_str()))) != CUDA_SUCCESS) {
    *why = fmt::format("the variant image {} has no kernel {} ({})", s.image, s.entry, cu_text(r));
    fn = nullptr;
  }
  if (push) {
    CUcontext popped = nullptr;
    KC_CU_TRY(cuCtxPopCurrent(&popped));
  }
  return fn;  // the module stays loaded for the life of the context
}

std::vector<format::ParamSlot> DriverSwapDriver::variant_layout(CUfunction v) { return driver_param_layout(v, false); }

bool DriverSwapDriver::allow_shared(CUfunction v, uint32_t shared_mem) {
  std::lock_guard lk(mu_);
  uint32_t& allowed = shared_allowed_[v];
  if (shared_mem <= allowed) return true;
  if (KC_CU_TRY(cuFuncSetAttribute(v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(shared_mem))) !=
      CUDA_SUCCESS)
    return false;
  allowed = shared_mem;
  return true;
}

bool DriverSwapDriver::stream_capturing(CUstream stream) {
  DriverLaunchQueries q;
  return q.stream_is_capturing(stream);
}

CUcontext DriverSwapDriver::current_context() {
  CUcontext c = nullptr;
  KC_CU_TRY(cuCtxGetCurrent(&c));
  return c;
}

}  // namespace kerncap::capture
