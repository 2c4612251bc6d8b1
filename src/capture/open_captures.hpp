#pragma once
// How many stream captures (cuStreamBeginCapture* .. cuStreamEndCapture) are open in the
// process. A launch into a capturing stream adds a graph node and runs only when the graph is
// launched, so it is not a launch; asking the driver about each launch's stream would cost
// every launch a driver call, and while no capture is open (nearly always) the answer is known.
// Profile mode's sampler and capture mode's watcher both keep one, fed at the capture calls'
// exits (stream_capture_call in launch_info.hpp tells them apart).
#include <atomic>

namespace kerncap::capture {

class OpenCaptures {
 public:
  void begin() { open_.fetch_add(1, std::memory_order_relaxed); }
  void end() {
    // Never below zero: an end whose begin came before kerncap started.
    int open = open_.load(std::memory_order_relaxed);
    while (open > 0 && !open_.compare_exchange_weak(open, open - 1, std::memory_order_relaxed)) {
    }
  }
  bool any() const { return open_.load(std::memory_order_relaxed) > 0; }

 private:
  std::atomic<int> open_{0};
};

}  // namespace kerncap::capture
