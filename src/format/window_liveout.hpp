#pragma once
// What the application did with the window's results after the window (`--live-out auto`,
// docs/window.md "Live-out"): for every region the window changed, whether a later operation
// of the application reached it before overwriting it — observed at capture by the window
// recorder (capture/window_liveout.hpp) and kept beside window.json as window_liveout.json.
// Written after the capture is published (the observation runs while the application goes on),
// so a window capture may lack it: --live-out auto then says so. Read as untrusted input.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kerncap::format {

inline constexpr const char* kWindowLiveOutFormat = "kerncap-window-liveout";
inline constexpr int kWindowLiveOutVersion = 2;  // 2: reads (where each region was reached)
inline constexpr const char* kWindowLiveOutFile = "window_liveout.json";
inline constexpr size_t kMaxLiveOutRegions = 1 << 20;
inline constexpr size_t kMaxLiveOutReads = 256;  // per region; more and reads_complete is false

struct LiveOutRegion {
  uint32_t id = 0;
  bool read = false;     // reached after the window before being overwritten (or never observable)
  std::string evidence;  // "launch 1234 of foo (parameter word at offset 8)", "overwritten by a memset at ..."
  // Where it was reached before being overwritten, region-relative: a launch's pointer as
  // [offset, 1), a copy's source as [offset, size). `reads_complete` false: not every read is
  // listed (more than kMaxLiveOutReads, work whose reads cannot be seen, a version 1 file), so
  // the whole region counts as read. Lets --live-out auto tell the tensors of one allocation
  // apart (replay/window_pieces.hpp).
  std::vector<std::pair<uint64_t, uint64_t>> reads;
  bool reads_complete = false;
};

struct WindowLiveOut {
  int version = kWindowLiveOutVersion;
  uint64_t horizon = 0;             // launches after the window the observation was to watch
  uint64_t launches_observed = 0;   // launches it saw
  std::string ended;                // "horizon" (that many launches seen) or "application ended"
  std::vector<LiveOutRegion> regions;  // every region the window changed
  std::set<uint32_t> live() const;     // the ids read after the window
  const LiveOutRegion* find(uint32_t id) const;
};

nlohmann::json to_json(const WindowLiveOut& w);
WindowLiveOut window_liveout_from_json(const nlohmann::json& j);  // strict: Error(Input)
// DIR/window_liveout.json, nullopt when absent; Error(Input) when present and bad.
std::optional<WindowLiveOut> read_window_liveout(const std::filesystem::path& capture_dir);

}  // namespace kerncap::format
