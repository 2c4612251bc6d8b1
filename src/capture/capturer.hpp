#pragma once
// Capture mode: watch every launch, and at the Nth one matching the pattern take BEFORE
// at API entry (after a synchronise), let the launch run, take AFTER at API exit, and
// publish the capture directory.
#include <cupti.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "capture/config.hpp"
#include "capture/image_store.hpp"
#include "capture/matcher.hpp"
#include "capture/snapshot.hpp"
#include "capture/tracker.hpp"
#include "format/manifest.hpp"

namespace kerncap::capture {

// Launches made while the depth is above zero are not counted (the Triton shim brackets
// autotuner benchmarks with kerncap_ignore_begin/end, exported from injection.cpp).
int ignore_depth();
void ignore_begin();
void ignore_end();

class Capturer {
 public:
  explicit Capturer(Config config);
  // Every CUPTI callback lands here (through the trampoline in injection.cpp).
  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  static std::vector<CUpti_CallbackId> driver_callback_ids();

 private:
  struct Pending {
    uint32_t correlation = 0;
    std::thread::id thread;
    format::Manifest manifest;
    std::vector<RegionState> regions;
    std::filesystem::path partial;
    std::unique_ptr<Stager> stager;
    std::chrono::steady_clock::time_point start;
  };

  void on_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  bool is_target(const CUpti_CallbackData* cb, const std::string& mangled, CUstream stream);
  void begin_capture(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, const std::string& mangled);
  void finish_capture(const CUpti_CallbackData* cb);
  void abandon(const std::string& why);
  bool claim();

  Config config_;
  Matcher matcher_;
  Tracker tracker_;
  ImageStore images_;
  std::atomic<bool> done_{false};
  std::mutex mu_;  // guards the fields below
  std::unordered_map<std::string, bool> name_matches_;
  std::unordered_set<std::string> ignored_names_;
  uint64_t matched_ = 0;
  uint64_t launches_ = 0;
  bool graph_note_ = false;
  std::unique_ptr<Pending> pending_;
};

}  // namespace kerncap::capture
