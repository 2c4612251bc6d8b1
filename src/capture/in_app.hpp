#pragma once
// The in-app time of the captured kernel: CUPTI kernel records of the application's launches
// (capture mode enables CONCURRENT_KERNEL records from the start), kept per kernel name as
// the last durations with their grids; at the capture, the median over the launches of the
// target kernel with the target's grid (the captured one included) goes into the manifest.
// Pure bookkeeping, fed by injection.cpp's buffer callback; thread-safe.
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kerncap::capture {

class InAppTimes {
 public:
  static constexpr size_t kKeep = 256;  // durations kept per kernel name (the latest)

  // One kernel record. `name` is CUPTI's string, shared by every record of the kernel and
  // alive as long as CUPTI: records are grouped by its address, its text copied once.
  void add(const char* name, const std::array<uint32_t, 3>& grid, uint64_t duration_ns);
  // The median duration of the kept launches of `mangled` with `grid`; empty when none.
  std::optional<double> median_ns(const std::string& mangled, const std::array<uint32_t, 3>& grid) const;

 private:
  struct Launch {
    std::array<uint32_t, 3> grid;
    uint64_t ns;
  };
  struct Kernel {
    std::string name;
    std::vector<Launch> ring;  // at most kKeep; `next` is where the next one goes
    size_t next = 0;
  };
  mutable std::mutex mu_;
  std::unordered_map<const char*, Kernel> kernels_;
};

// The process's one instance (capture mode's activity callback and the capturer share it).
InAppTimes& in_app_times();

}  // namespace kerncap::capture
