#pragma once
// kerncap's capture-mode watcher for the benches that measure it outside libkerncap.so
// (cupti_callback_cost, inject_probe): wired as injection.cpp wires it, with a target capture
// that never starts (the dispatch lies past any loop) and no events file (emit writes nothing).
#include <cupti.h>

#include <string>

#include "capture/inventory.hpp"
#include "capture/launch_info.hpp"
#include "capture/seams.hpp"
#include "capture/watcher.hpp"

namespace kerncap::bench {

class NoCapture final : public capture::TargetCapture {
 public:
  bool begin(const capture::TargetLaunch&) override { return false; }
  void finish(const CUpti_CallbackData&) override {}
};

struct Watch {
  explicit Watch(const std::string& pattern) : config(make_config(pattern)), inventory(config),
                                               watcher(config, inventory, queries, capture) {}
  static capture::Config make_config(const std::string& pattern) {
    capture::Config c;
    c.mode = capture::Mode::Capture;
    c.kernel = pattern;
    c.dispatch = 1ull << 40;
    return c;
  }
  capture::Config config;
  capture::Inventory inventory;
  capture::DriverLaunchQueries queries;
  NoCapture capture;
  capture::LaunchWatcher watcher;
};

// As injection.cpp's trampoline: catch everything. userdata is the LaunchWatcher.
inline void CUPTIAPI watch_handler(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void* data) {
  try {
    static_cast<capture::LaunchWatcher*>(userdata)->on_callback(domain, cbid, data);
  } catch (...) {
  }
}

}  // namespace kerncap::bench
