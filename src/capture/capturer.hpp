#pragma once
// Capture mode's work at a target launch (LaunchWatcher decides which launch that is):
// take BEFORE at API entry (after a synchronise), let the launch run, take AFTER at API
// exit, and publish the capture directory (the target's own OUT when there are several).
// Every driver call here is checked.
#include <cupti.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "capture/gpu_scan.hpp"
#include "capture/config.hpp"
#include "capture/inventory.hpp"
#include "capture/seams.hpp"
#include "capture/snapshot.hpp"
#include "format/capture_writer.hpp"
#include "format/manifest.hpp"

namespace kerncap::capture {

class Capturer final : public TargetCapture {
 public:
  Capturer(Config config, const Inventory& inventory);
  bool begin(const TargetLaunch& target) override;
  void finish(const CUpti_CallbackData& exit) override;

 private:
  struct Pending {
    Config config;  // for_target(): this target's output, pattern and dispatch
    bool stop_after = false;
    format::Manifest manifest;
    std::vector<RegionState> regions;
    std::unique_ptr<format::CaptureWriter> writer;  // the capture directory being written
    std::unique_ptr<Stager> stager;
    std::unique_ptr<GpuScanner> scanner;  // null: every region is read whole
    std::chrono::steady_clock::time_point start;
  };

  void begin_capture(const TargetLaunch& t);
  void finish_capture(std::unique_ptr<Pending> p, const CUpti_CallbackData* cb);
  void abandon(const std::string& why);
  // Marks the regions the launch cannot reach (closure.hpp) omitted: none of their bytes is stored.
  void omit_unreachable(Pending& p, std::span<const uint8_t> params);

  Config config_;
  const Inventory& inventory_;
  std::mutex mu_;
  std::map<uint32_t, std::unique_ptr<Pending>> pending_;  // by the launch's correlation id
};

}  // namespace kerncap::capture
