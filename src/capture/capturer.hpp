#pragma once
// Capture mode's work at a target launch (LaunchWatcher decides which launch that is):
// take BEFORE at API entry (after a synchronise), let the launch run, take AFTER at API
// exit, and publish the capture directory (the target's own OUT when there are several).
// Every driver call here is checked.
#include <cupti.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "capture/gpu_scan.hpp"
#include "capture/config.hpp"
#include "capture/inventory.hpp"
#include "capture/seams.hpp"
#include "capture/snapshot.hpp"
#include "capture/texture_plan.hpp"
#include "storage/capture_writer.hpp"
#include "format/manifest.hpp"

namespace kerncap::capture {

class Capturer final : public TargetCapture {
 public:
  Capturer(Config config, const Inventory& inventory);
  bool begin(const TargetLaunch& target) override;
  void finish(const CUpti_CallbackData& exit) override;
  // A window of launches (window_recorder.hpp): runs after AFTER, before the capture is
  // published, to add the window's files to its directory. Throws to abandon the capture.
  using BeforePublish = std::function<void(format::CaptureWriter&, format::Manifest&)>;
  void set_before_publish(BeforePublish f) { before_publish_ = std::move(f); }
  // Drops the capture begun at the launch with this correlation id (never finished), saying why.
  void abandon_pending(uint32_t correlation, const std::string& why);

 private:
  // A CUDA array the launch reaches through a texture or surface object: its region (after
  // the memory regions in the manifest) and where to read it again for AFTER.
  struct ArrayState {
    RegionState st;
    format::ArrayRecord record;
    TexturePlan::Source source;
  };
  struct Pending {
    Config config;  // for_target(): this target's output, pattern and dispatch
    bool stop_after = false;
    format::Manifest manifest;
    std::vector<RegionState> regions;
    std::vector<ArrayState> arrays;
    std::unique_ptr<format::CaptureWriter> writer;  // the capture directory being written
    std::unique_ptr<Stager> stager;
    std::unique_ptr<GpuScanner> scanner;  // null: every region is read whole
    std::chrono::steady_clock::time_point start;
  };

  void begin_capture(const TargetLaunch& t, std::unique_ptr<Pending>& p);
  void finish_capture(std::unique_ptr<Pending> p, const CUpti_CallbackData* cb);
  // Reports a failed capture; `p` (when one was begun) has its partial directory removed,
  // leaving one line in OUT that says what happened.
  void abandon(const std::string& why, Pending* p);
  // Marks the regions the launch cannot reach (closure.hpp) omitted: none of their bytes is stored.
  // `roots`: the parameter bytes, then the addresses texture objects read (as 8-byte words).
  void omit_unreachable(Pending& p, std::span<const uint8_t> roots);
  // The arrays of `plan` read and stored as regions after the memory regions; the manifest's
  // textures section. Throws when the memory a texture reads is not tracked.
  void capture_textures(Pending& p, TexturePlan plan);

  Config config_;
  const Inventory& inventory_;
  std::mutex mu_;
  std::map<uint32_t, std::unique_ptr<Pending>> pending_;  // by the launch's correlation id
  BeforePublish before_publish_;
};

struct LaunchArgs;
// The launched function as the driver describes it (after describe_attributes), for choosing
// among images that hold a kernel of the same name (ImageStore::find).
FunctionFacts function_facts(const LaunchArgs& a, CUfunction fn, const format::Manifest& m);

}  // namespace kerncap::capture
