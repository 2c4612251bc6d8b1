#include "common/driver.hpp"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap {
namespace {

struct Loaded {
  Driver table;
  std::string error;
  std::string missing;  // entry points this driver does not have
};

// CUDA 13 added context-taking variants of these under the same names (cudaTypedefs.h:
// PFN_cuCtxSynchronize_v13000(CUcontext)), while cuda.h still declares the old
// prototypes. Ask for the ABI that matches the header we compile against.
int abi_version(const char* name) {
  static const char* const kPre13[] = {"cuCtxSynchronize", "cuCtxGetDevice"};
  for (const char* n : kPre13)
    if (std::strcmp(n, name) == 0) return 12000;
  return CUDA_VERSION;
}

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    out.error = fmt::format(
        "cannot load the NVIDIA driver library libcuda.so.1 ({}); kerncap replay/extract need a "
        "machine with an NVIDIA GPU and its driver installed",
        dlerror());
    return out;
  }
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    out.error = "the NVIDIA driver is too old: it has no cuGetProcAddress_v2 (kerncap needs a CUDA 12+ driver)";
    return out;
  }
#define KERNCAP_DRIVER_RESOLVE(name)                                                         \
  {                                                                                          \
    void* fn = nullptr;                                                                      \
    CUdriverProcAddressQueryResult st{};                                                     \
    if (get_proc(#name, &fn, abi_version(#name), CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS \
        && st == CU_GET_PROC_ADDRESS_SUCCESS)                                                \
      out.table.name = reinterpret_cast<decltype(out.table.name)>(fn);                       \
    else                                                                                     \
      out.missing += #name " ";                                                              \
  }
  KERNCAP_DRIVER_FUNCS(KERNCAP_DRIVER_RESOLVE)
#undef KERNCAP_DRIVER_RESOLVE
  if (!out.table.cuInit) out.error = "the NVIDIA driver library has no cuInit";
  return out;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const Driver& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) device_error(l.error);
  return l.table;
}

std::string driver_load_error() { return loaded().error; }

std::string driver_missing_entries() { return loaded().missing; }

std::string cu_error_text(CUresult r, const char* call, const char* file, int line) {
  const char* name = "unknown";
  const char* text = "unknown error";
  const Loaded& l = loaded();
  if (l.table.cuGetErrorName) l.table.cuGetErrorName(r, &name);
  if (l.table.cuGetErrorString) l.table.cuGetErrorString(r, &text);
  return fmt::format("{} failed: {} ({}) at {}:{}", call, name ? name : "?", text ? text : "?", file, line);
}

void cu_fail(CUresult r, const char* call, const char* file, int line) {
  device_error(cu_error_text(r, call, file, line));
}

}  // namespace kerncap
