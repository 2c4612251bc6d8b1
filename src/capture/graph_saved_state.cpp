#include "capture/graph_saved_state.hpp"

#include <new>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"

namespace kerncap::capture {

SavedState::SavedState(const std::vector<TrackedRange>& ranges) {
  for (const auto& r : ranges) {
    if (r.size == 0) continue;
    Piece p;
    p.base = r.base;
    try {
      p.bytes.resize(r.size);
    } catch (const std::bad_alloc&) {
      device_error("not enough host memory to keep the application's memory (" + human_bytes(bytes_ + r.size) +
                   ") for --continue");
    }
    KC_CU(cuMemcpyDtoH(p.bytes.data(), static_cast<CUdeviceptr>(r.base), r.size));
    bytes_ += r.size;
    pieces_.push_back(std::move(p));
  }
}

void SavedState::restore() const {
  for (const auto& p : pieces_) KC_CU(cuMemcpyHtoD(static_cast<CUdeviceptr>(p.base), p.bytes.data(), p.bytes.size()));
}

}  // namespace kerncap::capture
