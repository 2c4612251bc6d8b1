// libkerncap.so as NVTX's injection library, for a window bounded by an NVTX range
// (window_nvtx.hpp). NVTX calls InitializeInjectionNvtx2 of the library NVTX_INJECTION64_PATH
// names, once, at the application's first NVTX call (which may come before cuInit, so the
// launcher sets the variable: extract/environment.cpp). kerncap does not implement NVTX's
// export tables itself: it hands them to the CUPTI it is linked with, whose NVTX callback
// domain then reaches kerncap's one subscriber (window_mode.cpp) with every other callback.
// The same libcupti: this library's own dependency, loaded with it (dlopen of a loaded file
// returns that one), never a second copy.
#include <cupti.h>
#include <dlfcn.h>

#include <cstdint>

namespace {

using NvtxGetExportTable = const void* (*)(uint32_t);
using NvtxInitialize = int (*)(NvtxGetExportTable);

void* nvtx_inject_cupti() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiSubscribe), &info) && info.dli_fname)
    if (void* h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD)) return h;
  return dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
}

}  // namespace

// 0 tells NVTX the injection failed: its calls then stay no-ops, and a range window reports that
// no NVTX range reached kerncap.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTable get_export_table) {
  try {
    void* cupti = nvtx_inject_cupti();
    if (!cupti) return 0;
    // Looked up in libcupti's own scope: the same name here is this function.
    const auto init = reinterpret_cast<NvtxInitialize>(dlsym(cupti, "InitializeInjectionNvtx2"));
    return init ? init(get_export_table) : 0;
  } catch (...) {
    return 0;
  }
}
