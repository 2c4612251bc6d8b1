// libkerncap.so entry point. The CUDA driver loads this library in every process that
// calls cuInit while CUDA_INJECTION64_PATH names it, and calls InitializeInjection().
//
// Rules for all code under src/capture/ — it runs inside someone else's process:
//  1. Never throw across a callback or the entry point: catch everything, log, degrade.
//  2. Never change the application's results: read its memory, never write it; never
//     launch work on its streams; synchronise only at the target launch.
//  3. Never block except at the target launch (and only for as long as the snapshot takes).
//  4. Inert unless asked: with no mode set (kerncap env), do nothing at all; processes that never
//     call cuInit never load us.
//  5. One configuration, read from the environment in config.cpp and nowhere else.
//  6. Quiet unless asked: warnings and the capture summary only (Config::verbose for more).
//  7. Our own driver calls fire callbacks too: everything runs inside a ToolScope.
//
// CUPTI reaches kerncap only through one-line C trampolines (here and in profiler.cpp)
// that forward to a C++ object and catch everything; the objects take plain callback data
// and records (seams.hpp), which is how the unit tests drive them without a GPU.
#include <cupti.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "capture/capturer.hpp"
#include "capture/config.hpp"
#include "capture/cupti_check.hpp"
#include "capture/events.hpp"
#include "capture/graph_capture.hpp"
#include "capture/graph_driver.hpp"
#include "capture/graph_tracker.hpp"
#include "capture/in_app_records.hpp"
#include "capture/launch_info.hpp"
#include "capture/profiler.hpp"
#include "capture/rank_gate.hpp"
#include "capture/tool_scope.hpp"
#include "capture/watcher.hpp"
#include "capture/window_mode.hpp"
#include "common/log.hpp"

namespace kerncap::capture {
namespace {

// Capture mode's objects, wired once: the watcher decides, the capturer does the work at
// the target launch. Leaked on purpose: callbacks may fire during exit.
struct CaptureMode {
  explicit CaptureMode(Config c)
      : config(std::move(c)), inventory(config), capturer(config, inventory),
        watcher(config, inventory, queries, capturer), graphs(graph_queries),
        graph_capturer(inventory, capturer) {
    watcher.watch_graphs(graphs, graph_capturer);
  }
  Config config;
  Inventory inventory;
  DriverLaunchQueries queries;
  Capturer capturer;
  LaunchWatcher watcher;
  DriverGraphQueries graph_queries;
  GraphTracker graphs;  // executable graphs and their kernel nodes
  GraphCapturer graph_capturer;
};
CaptureMode* g_capture = nullptr;  // for the exit report; never freed

// A target that exists only in graphs never launched: said at exit, when it is known.
void report_at_exit() {
  try {
    ToolScope scope;
    if (g_capture) {
      g_capture->watcher.report_unlaunched_graphs();
      g_capture->watcher.report_unlaunched_kernels();
      g_capture->watcher.report_matches();
    }
  } catch (...) {
  }
}

void CUPTIAPI trampoline(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  try {
    static_cast<LaunchWatcher*>(userdata)->on_callback(domain, cbid, data);
  } catch (const std::exception& e) {
    log::warn("internal error in a callback (ignored): {}", e.what());
  } catch (...) {
    log::warn("internal error in a callback (ignored)");
  }
}

// A CUPTI failure at start-up: logged by KC_CUPTI, reported to the launcher here. `other`:
// the subscriber that got there first, when CUPTI named it.
bool started(CuptiStatus st, const char* what, const char* other = nullptr) {
  if (st) return true;
  if (st.result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    log::warn("another CUPTI client{} is active in this process; kerncap cannot run beside it: stop the other "
              "tool (nsys, ncu, cuda-gdb, compute-sanitizer, the PyTorch profiler...)",
              other && *other ? fmt::format(" ({})", other) : std::string(" (nsys, ncu, the PyTorch profiler...)"));
  emit(format::events::error(fmt::format("{} failed: {}", what, cupti_error_text(st.result))));
  return false;
}

void start_capture(const Config& config) {
  if (!config.window_end.empty() || config.window_graph || !config.window_range.empty()) {  // a window of launches (window_mode.cpp)
    start_window_capture(config);
    return;
  }
  auto* mode = new CaptureMode(config);
  g_capture = mode;
  std::atexit(&report_at_exit);
  // cuptiSubscribe_v2, as profile mode: it names the client that holds CUPTI when it is not
  // us. (Per launch it costs the same as cuptiSubscribe: bench/capture_overhead.sh's probes.)
  const Subscription subscription = subscribe_named(trampoline, &mode->watcher, "kerncap capture");
  if (!started(subscription.status, "cuptiSubscribe_v2", subscription.other.c_str())) return;
  CUpti_SubscriberHandle sub = subscription.handle;
  for (CUpti_CallbackId id : LaunchWatcher::driver_callback_ids())
    started(KC_CUPTI(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id)), "cuptiEnableCallback");
  started(KC_CUPTI(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED)),
          "cuptiEnableCallback");
  // Kernel records for the in-app time (the manifest's in_app_*): by default from the first
  // match, or kInAppLead matches before a far dispatch, so that the launches before pay
  // nothing for them.
  if (config.in_app_time != Config::InAppTime::Off) {
    start_in_app_records(config.in_app_time == Config::InAppTime::Start);
    if (config.in_app_time == Config::InAppTime::Match) mode->watcher.on_in_app_window(&enable_in_app_records);
  }
}

}  // namespace
}  // namespace kerncap::capture

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace kerncap::capture;
  try {
    ToolScope scope;
    std::vector<std::string> problems;
    Config config = read_config(&problems);
    if (config.mode == Mode::Off && problems.empty()) return 1;
    kerncap::log::set_prefix(fmt::format("kerncap[{}]", ::getpid()));
    kerncap::log::set_level(config.verbose >= 2   ? kerncap::log::Level::Debug
                            : config.verbose >= 1 ? kerncap::log::Level::Info
                                                  : kerncap::log::Level::Quiet);
    for (const auto& p : problems) kerncap::log::warn("configuration: {}", p);
    if (config.mode == Mode::Off) return 1;
    events_open(config.output);
    auto start_line = kerncap::format::events::start(kerncap::format::to_string(config.mode));
    if (config.mode == Mode::Profile && !config.swaps.empty() && config.rank >= 0) {
      // `kerncap run --swap --rank R`: every process is profiled (both arms' times), only rank
      // R's launches are swapped or shadow-checked.
      const RankDecision d = decide_rank(config, read_process_rank(),
                                         [&] { return kerncap::format::take_start_slot(config.output); });
      kerncap::format::events::add_rank(start_line, d.rank, d.source, d.selected);
      emit(start_line);
      if (!d.selected) config.swaps.clear();
    } else if (config.mode == Mode::Capture && config.rank >= 0) {
      const RankDecision d = decide_rank(config, read_process_rank(),
                                         [&] { return kerncap::format::take_start_slot(config.output); });
      kerncap::format::events::add_rank(start_line, d.rank, d.source, d.selected);
      emit(start_line);
      if (!d.selected) {
        kerncap::log::info("rank {} ({}), not rank {}: this process runs without kerncap", d.rank,
                           d.source.empty() ? "unknown" : d.source, config.rank);
        return 1;
      }
    } else {
      emit(start_line);
    }
    if (config.mode == Mode::Profile) start_profiler(config);
    else start_capture(config);
  } catch (const std::exception& e) {
    kerncap::log::warn("initialisation failed, the application runs without kerncap: {}", e.what());
  } catch (...) {
    kerncap::log::warn("initialisation failed, the application runs without kerncap");
  }
  return 1;
}

// Called by the Triton shim (python/kerncap/triton_shim) around autotuner benchmarks: capture
// mode does not count the launches, profile mode marks them (profile_benchmark_begin).
extern "C" __attribute__((visibility("default"))) int kerncap_ignore_begin(void) {
  kerncap::capture::ignore_begin();
  kerncap::capture::profile_benchmark_begin();
  return kerncap::capture::ignore_depth();
}
extern "C" __attribute__((visibility("default"))) int kerncap_ignore_end(void) {
  kerncap::capture::ignore_end();
  kerncap::capture::profile_benchmark_end();
  return kerncap::capture::ignore_depth();
}
