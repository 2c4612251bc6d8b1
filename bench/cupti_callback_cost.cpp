// What CUPTI's callback API costs an application's launches, configuration by configuration,
// in one process: capture mode (kerncap extract, before the target) reads well above profile
// mode's floor although our own callback work is about 25 ns a launch (docs/capture.md), and
// this separates what CUPTI itself charges. Each round runs every configuration once, in
// order, on the same thread (a subscription, the loop of tiny launches, the unsubscription),
// so drift on a shared host touches every row alike; medians over the rounds.
//   before CUPTI the loop before any subscription (up to 3 runs, first; CUPTI may stay attached
//                after an unsubscription, which would make `none` differ from it)
//   none         no subscriber
//   launch       the launch callbacks (cuLaunchKernel*, ...) with a handler that returns at once
//   launch+res   the same and the resource domain's module-loaded callback (capture mode has it)
//   profile set  the callbacks profile mode's sampled timing enables (profile_callback_ids)
//   capture set  every driver callback capture mode enables (LaunchWatcher::driver_callback_ids:
//                allocations, arrays and textures, modules, graphs, launches, stream capture)
//   driver all   the whole driver-API domain
//   v2 launch    `launch` subscribed with cuptiSubscribe_v2 (profile mode's call)
//   watch other  the capture set handled by kerncap's own LaunchWatcher (as libkerncap.so wires
//                it), its pattern matching no kernel: capture mode before the target, in process
//   watch same   the same, its pattern matching the loop's kernel with a dispatch past the loop:
//                every launch is a counted match
// The two `watch` rows against `capture set` are kerncap's own per-launch work; against the
// `kerncap extract` runs of bench/capture_overhead.sh they separate what the process around
// it (injection, the launcher) adds.
//
// With --early, the process first subscribes the launch callbacks (empty handler) before its
// first CUDA call, so before the context exists, as an injected tool does; the loop runs
// `early launch` R times under that subscription, which is then dropped before the rows above.
// Injected, the launch callbacks cost 0.2-0.4 us a launch (bench/capture_overhead.sh's probe
// rows) where this bench's late subscription measures about none: this row says whether
// subscribing before the context is what costs.
//
//   build/bench/cupti_callback_cost [--kernels N] [--rounds R] [--early]
// Prints one row per configuration: median loop ms, ratio to `none`, µs per launch above it.
// Exit 0 measured, 1 failed, 77 no GPU.
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capture/launch_info.hpp"
#include "capture/watcher.hpp"
#include "probe_watch.hpp"

extern "C" bool cost_launch_loop(int* counter, long n);
extern "C" int* cost_counter();

namespace {

using kerncap::capture::LaunchWatcher;

void CUPTIAPI empty_handler(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

using kerncap::bench::Watch;
using kerncap::bench::watch_handler;

struct Config {
  const char* name;
  bool subscribe;
  bool v2;
  std::vector<CUpti_CallbackId> driver_ids;
  bool resource;
  bool driver_all;
  const char* watch_pattern = nullptr;  // kerncap's LaunchWatcher as the handler, this pattern
};

bool check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "%s: %s\n", what, text ? text : "unknown CUPTI error");
  return false;
}

// One configuration's loop time in ms, or a negative value on failure.
double measure(const Config& c, int* counter, long n) {
  CUpti_SubscriberHandle sub = nullptr;
  std::unique_ptr<Watch> watch;
  if (c.watch_pattern) watch = std::make_unique<Watch>(c.watch_pattern);
  if (c.subscribe) {
    if (watch) {
      if (!check(cuptiSubscribe(&sub, &watch_handler, &watch->watcher), "cuptiSubscribe")) return -1;
    } else if (c.v2) {
      CUpti_SubscriberParams p{};
      p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
      p.subscriberName = "cupti_callback_cost";
      if (!check(cuptiSubscribe_v2(&sub, &empty_handler, nullptr, &p), "cuptiSubscribe_v2")) return -1;
    } else if (!check(cuptiSubscribe(&sub, &empty_handler, nullptr), "cuptiSubscribe")) {
      return -1;
    }
    for (CUpti_CallbackId id : c.driver_ids)
      if (!check(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback")) return -1;
    if (c.resource &&
        !check(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED),
               "cuptiEnableCallback(resource)"))
      return -1;
    if (c.driver_all && !check(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API), "cuptiEnableDomain")) return -1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const bool ok = cost_launch_loop(counter, n);
  const auto t1 = std::chrono::steady_clock::now();
  if (sub && !check(cuptiUnsubscribe(sub), "cuptiUnsubscribe")) return -1;
  if (watch && watch->watcher.launches() < static_cast<uint64_t>(n)) {
    std::fprintf(stderr, "%s: the watcher saw %llu of %ld launches\n", c.name,
                 static_cast<unsigned long long>(watch->watcher.launches()), n);
    return -1;
  }
  return ok ? std::chrono::duration<double, std::milli>(t1 - t0).count() : -1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  long kernels = 100000;
  int rounds = 7;
  bool early = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--kernels" && i + 1 < argc) kernels = std::strtol(argv[++i], nullptr, 10);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--early") early = true;
    else {
      std::fprintf(stderr, "usage: cupti_callback_cost [--kernels N] [--rounds R] [--early]\n");
      return 2;
    }
  }
  if (kernels < 1 || rounds < 1) {
    std::fprintf(stderr, "--kernels and --rounds must be positive\n");
    return 2;
  }
  const std::vector<CUpti_CallbackId> launch = kerncap::capture::launch_callback_ids();
  CUpti_SubscriberHandle early_sub = nullptr;
  if (early) {  // before any CUDA call
    if (!check(cuptiSubscribe(&early_sub, &empty_handler, nullptr), "cuptiSubscribe(early)")) return 1;
    for (CUpti_CallbackId id : launch)
      if (!check(cuptiEnableCallback(1, early_sub, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback")) return 1;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  int* counter = cost_counter();
  if (!counter) return 1;
  const std::vector<CUpti_CallbackId> profile = kerncap::capture::profile_callback_ids();
  const std::vector<Config> configs = {
      {"none", false, false, {}, false, false},
      {"launch", true, false, launch, false, false},
      {"launch+res", true, false, launch, true, false},
      {"profile set", true, false, profile, false, false},
      {"capture set", true, false, LaunchWatcher::driver_callback_ids(), true, false},
      {"driver all", true, false, {}, false, true},
      {"v2 launch", true, true, launch, false, false},
      {"watch other", true, false, LaunchWatcher::driver_callback_ids(), true, false, "kerncap_bench_no_such_kernel"},
      {"watch same", true, false, LaunchWatcher::driver_callback_ids(), true, false, "cost_tiny_kernel"},
  };
  if (!cost_launch_loop(counter, 1000)) return 1;  // warm-up: context, module, clocks
  std::vector<double> early_ms;
  if (early_sub) {
    for (int r = 0; r < rounds; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      if (!cost_launch_loop(counter, kernels)) return 1;
      early_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (!check(cuptiUnsubscribe(early_sub), "cuptiUnsubscribe(early)")) return 1;
  }
  // Once before any subscription: CUPTI, once attached, may leave the driver's callback layer
  // in place after cuptiUnsubscribe, so `none` in the rounds may not be a process that never
  // had CUPTI; this row says whether that matters.
  std::vector<double> before;
  for (int r = 0; r < std::min(rounds, 3); ++r) {
    const double t = measure(configs[0], counter, kernels);
    if (t < 0) return 1;
    before.push_back(t);
  }
  std::vector<std::vector<double>> ms(configs.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t c = 0; c < configs.size(); ++c) {
      const double t = measure(configs[c], counter, kernels);
      if (t < 0) {
        std::fprintf(stderr, "%s: failed\n", configs[c].name);
        return 1;
      }
      ms[c].push_back(t);
    }
  const double base = median(ms[0]);
  std::printf("CUPTI callback cost: %ld tiny kernel launches, median of %d rounds (each round runs every row)\n",
              kernels, rounds);
  const double b = median(before);
  std::printf("  %-12s loop %9.1f ms   ratio %.2fx  (%5.2f us a launch above none)   runs:", "before CUPTI", b, b / base,
              (b - base) * 1000.0 / static_cast<double>(kernels));
  for (double t : before) std::printf(" %.1f", t);
  std::printf("\n");
  if (!early_ms.empty()) {
    const double e = median(early_ms);
    std::printf("  %-12s loop %9.1f ms   ratio %.2fx  (%5.2f us a launch above none)   runs:", "early launch", e, e / base,
                (e - base) * 1000.0 / static_cast<double>(kernels));
    for (double t : early_ms) std::printf(" %.1f", t);
    std::printf("  (before the rounds, subscribed before the context)\n");
  }
  for (size_t c = 0; c < configs.size(); ++c) {
    const double m = median(ms[c]);
    std::printf("  %-12s loop %9.1f ms   ratio %.2fx  (%5.2f us a launch above none)   runs:", configs[c].name, m,
                m / base, (m - base) * 1000.0 / static_cast<double>(kernels));
    for (double t : ms[c]) std::printf(" %.1f", t);
    std::printf("\n");
  }
  cudaFree(counter);
  return 0;
}
