#pragma once
// The application's memory as it was at a graph launch, kept on the host so that after a
// capture inside the graph (which ran the target's ancestors and the target itself) the
// memory is put back and the application's own graph launch runs from the state it
// expects: `--continue` leaves its results unchanged. Driver calls; the device must be idle.
#include <cstdint>
#include <vector>

#include "capture/ranges.hpp"

namespace kerncap::capture {

class SavedState {
 public:
  // Copies every range to the host. Throws (nothing saved) when one cannot be read or the
  // host lacks the memory.
  explicit SavedState(const std::vector<TrackedRange>& ranges);
  // Writes every range back. Throws on the first that cannot be written.
  void restore() const;
  uint64_t bytes() const { return bytes_; }

 private:
  struct Piece {
    uint64_t base = 0;
    std::vector<uint8_t> bytes;
  };
  std::vector<Piece> pieces_;
  uint64_t bytes_ = 0;
};

}  // namespace kerncap::capture
