// An injection library for bench/capture_overhead.sh: loaded as libkerncap.so is
// (CUDA_INJECTION64_PATH, InitializeInjection at cuInit, before any context or module), it
// subscribes one CUPTI configuration chosen by KERNCAP_PROBE, so that the cost capture mode
// adds to an application's launches can be split into CUPTI's part at injection time and
// kerncap's watcher:
//   launch        the launch callbacks, a handler that returns at once
//   launch+res    the same and the resource domain's module-loaded callback
//   capture       capture mode's driver callbacks and the module-loaded callback, empty handler
//   capture-nores capture mode's driver callbacks alone, empty handler
//   watch         capture mode's set handled by kerncap's LaunchWatcher, matching no kernel
// A prefix "v2:" subscribes with cuptiSubscribe_v2 (as kerncap does) instead of cuptiSubscribe.
// Anything else: nothing is subscribed. Failures are printed and the application runs on.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "capture/launch_info.hpp"
#include "capture/watcher.hpp"
#include "probe_watch.hpp"

namespace {

void CUPTIAPI empty_handler(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

bool ok(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  std::fprintf(stderr, "inject_probe: %s failed (%d)\n", what, static_cast<int>(r));
  return false;
}

void probe(std::string kind) {
  const bool v2 = kind.rfind("v2:", 0) == 0;
  if (v2) kind = kind.substr(3);
  using kerncap::capture::LaunchWatcher;
  std::vector<CUpti_CallbackId> ids;
  bool resource = false;
  CUpti_CallbackFunc handler = &empty_handler;
  void* userdata = nullptr;
  if (kind == "launch" || kind == "launch+res") {
    ids = kerncap::capture::launch_callback_ids();
    resource = kind == "launch+res";
  } else if (kind == "capture" || kind == "capture-nores" || kind == "watch") {
    ids = LaunchWatcher::driver_callback_ids();
    resource = kind != "capture-nores";
    if (kind == "watch") {
      // Leaked on purpose: callbacks may fire during exit.
      auto* w = new kerncap::bench::Watch("kerncap_bench_no_such_kernel");
      handler = &kerncap::bench::watch_handler;
      userdata = &w->watcher;
    }
  } else {
    return;
  }
  CUpti_SubscriberHandle sub = nullptr;
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "inject_probe";
  if (!ok(v2 ? cuptiSubscribe_v2(&sub, handler, userdata, &params) : cuptiSubscribe(&sub, handler, userdata),
          "cuptiSubscribe"))
    return;
  for (CUpti_CallbackId id : ids) ok(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback");
  if (resource)
    ok(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED), "cuptiEnableCallback");
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    const char* kind = std::getenv("KERNCAP_PROBE");
    probe(kind ? kind : "");
  } catch (...) {
    std::fprintf(stderr, "inject_probe: failed\n");
  }
  return 1;
}
