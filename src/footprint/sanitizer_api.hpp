#pragma once
// The Compute Sanitizer API, loaded at run time (dlopen) so kerncap starts, and every other
// subcommand works, where libsanitizer-public.so is missing. Only built when its headers
// were found at configure time (KERNCAP_SANITIZER_ROOT).
#include <sanitizer.h>

#include <filesystem>
#include <optional>
#include <string>

namespace kerncap::footprint {

#define KERNCAP_SANITIZER_FUNCS(X)                                                             \
  X(sanitizerSubscribe) X(sanitizerUnsubscribe) X(sanitizerEnableDomain) X(sanitizerAddPatches) \
  X(sanitizerPatchInstructions) X(sanitizerPatchModule) X(sanitizerUnpatchModule)              \
  X(sanitizerSetCallbackData) X(sanitizerGetFunctionPcAndSize) X(sanitizerGetResultString)

struct SanitizerApi {
#define KERNCAP_SANITIZER_MEMBER(name) decltype(&::name) name = nullptr;
  KERNCAP_SANITIZER_FUNCS(KERNCAP_SANITIZER_MEMBER)
#undef KERNCAP_SANITIZER_MEMBER
  std::filesystem::path path;  // the library that was loaded
};

// Loads libsanitizer-public.so from `explicit_path`, else the first of: beside kerncap
// (../lib and its own folder, where the build copies it), the loader's search path, the
// CUDA toolkit (/usr/local/cuda/compute-sanitizer). Throws Error(Usage)
// "footprint needs libsanitizer-public.so: ..." saying where it looked.
const SanitizerApi& load_sanitizer(const std::optional<std::filesystem::path>& explicit_path);

// "sanitizerPatchModule(module) failed: SANITIZER_ERROR_... (text) at file:line"
std::string sanitizer_error_text(const SanitizerApi& api, SanitizerResult r, const char* call, const char* file,
                                 int line);

}  // namespace kerncap::footprint

// The one checking macro for sanitizer calls: KC_SAN(api, sanitizerPatchModule(module)).
#define KC_SAN(api, call)                                                                              \
  do {                                                                                                 \
    SanitizerResult kc_san_result_ = (api).call;                                                       \
    if (kc_san_result_ != SANITIZER_SUCCESS)                                                           \
      ::kerncap::device_error(::kerncap::footprint::sanitizer_error_text((api), kc_san_result_, #call, \
                                                                         __FILE__, __LINE__));         \
  } while (0)
// For calls whose failure is an answer (or must not throw: inside a callback).
#define KC_SAN_TRY(api, call) ((api).call)
