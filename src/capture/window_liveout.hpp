#pragma once
// `--live-out auto`'s observation (docs/window.md "Live-out"): after a window is captured the
// application goes on, and this watches what its next operations do with the regions the
// window changed, cheaply (host work at each API entry, no synchronisation, no device read):
//   - a region is READ when a later kernel launch's parameter bytes hold a pointer into it
//     (any 8-byte-aligned word of the buffer, structs passed by value included), or a copy
//     reads from it (device to host, device to device), before it is overwritten;
//   - it is DEAD when a memset or a copy overwrites every byte the window changed in it before
//     any such read, or when nothing reaches it within the horizon (N launches after the
//     window) or before the application ends.
// A kernel launch cannot be told to read or write what it reaches (no instrumentation), so
// reaching counts as reading: a buffer the next iteration's same kernel rewrites is live.
// Not seen: pointers stored in device memory (a pointer array) and reads by the host through
// mapped or managed memory, so only device memory is judged by observation; module globals,
// host and managed regions are always live. No CUDA call here (tests drive it directly).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "format/window_liveout.hpp"

namespace kerncap::capture {

// One region the window changed: its range in the application, and the extent of the bytes
// it changed (what an overwrite must cover to kill it).
struct WindowChanged {
  uint32_t id = 0;
  uint64_t base = 0, size = 0;
  uint64_t changed_lo = 0, changed_hi = 0;  // region offsets, [lo, hi)
  bool observable = true;  // device memory; false: always live (say why in `evidence`)
  std::string evidence;
};

class LiveOutObserver {
 public:
  LiveOutObserver(std::vector<WindowChanged> changed, uint64_t horizon);
  // A later kernel launch: true when this launch was the horizon's last (the observation is over).
  bool on_launch(const std::string& name, uint64_t launch_index, std::span<const uint8_t> params);
  // A later operation that reads [src, src + bytes) or writes [dst, dst + bytes).
  void on_read(uint64_t src, uint64_t bytes, const std::string& what);
  void on_write(uint64_t dst, uint64_t bytes, const std::string& what);
  // Work whose reads cannot be seen (a CUDA graph launch): every region not yet decided is read.
  void on_opaque(const std::string& what);
  bool over() const { return launches_ >= horizon_; }
  uint64_t launches() const { return launches_; }
  // The observation as it stands: `ended` "horizon" or "application ended".
  format::WindowLiveOut result(const std::string& ended) const;

 private:
  enum class State { Unknown, Read, Dead };
  struct Entry {
    WindowChanged r;
    State state = State::Unknown;
    std::string evidence;
    // Where it was reached while the window's bytes were still there (format::LiveOutRegion).
    std::vector<std::pair<uint64_t, uint64_t>> reads;
    bool reads_complete = true;
    bool closed = false;  // overwritten after a read: later reads are of other bytes
  };
  void note_read(Entry& e, uint64_t offset, uint64_t size);
  Entry* find(uint64_t address);  // the region holding the address, or null
  void read(Entry& e, const std::string& evidence);

  std::vector<Entry> entries_;  // sorted by base
  uint64_t horizon_;
  uint64_t launches_ = 0;
};

}  // namespace kerncap::capture
