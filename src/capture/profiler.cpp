#include "capture/profiler.hpp"

#include "common/log.hpp"

namespace kerncap::capture {

bool start_profiler(const Config&) {
  log::warn("profile mode is not implemented yet");
  return false;
}

}  // namespace kerncap::capture
