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
// A prefix "ctx:" enables the callbacks only when the first context has been created (the
// resource domain's CONTEXT_CREATED), not at injection: whether enabling them before the
// context exists is what makes them cost (cupti_callback_cost, which enables them later in
// one process, measures about nothing).
// Anything else: nothing is subscribed. Failures are printed and the application runs on.
#include <cupti.h>

#include <atomic>
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

// For "ctx:": what to enable once the first context exists.
struct Deferred {
  CUpti_SubscriberHandle sub = nullptr;
  std::vector<CUpti_CallbackId> ids;
  bool resource = false;
  std::atomic<bool> done{false};
};
Deferred g_deferred;

void enable(CUpti_SubscriberHandle sub, const std::vector<CUpti_CallbackId>& ids, bool resource) {
  for (CUpti_CallbackId id : ids) ok(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback");
  if (resource)
    ok(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED), "cuptiEnableCallback");
}

// The handler of a "ctx:" probe before its callbacks are on: the context-created callback
// turns them on (once), then hands everything to the probe's handler.
CUpti_CallbackFunc g_inner = nullptr;
void CUPTIAPI deferring_handler(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    if (!g_deferred.done.exchange(true)) enable(g_deferred.sub, g_deferred.ids, g_deferred.resource);
    return;
  }
  g_inner(userdata, domain, cbid, data);
}

void probe(std::string kind) {
  const bool v2 = kind.rfind("v2:", 0) == 0;
  if (v2) kind = kind.substr(3);
  const bool at_context = kind.rfind("ctx:", 0) == 0;
  if (at_context) kind = kind.substr(4);
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
  if (at_context) {
    g_inner = handler;
    handler = &deferring_handler;
  }
  if (!ok(v2 ? cuptiSubscribe_v2(&sub, handler, userdata, &params) : cuptiSubscribe(&sub, handler, userdata),
          "cuptiSubscribe"))
    return;
  if (!at_context) {
    enable(sub, ids, resource);
    return;
  }
  g_deferred.sub = sub;
  g_deferred.ids = ids;
  g_deferred.resource = resource;
  ok(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED), "cuptiEnableCallback");
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
