#pragma once
// The device of each captured region (cuPointerGetAttribute DEVICE_ORDINAL), see
// region_devices.cpp and peer_scan.hpp.
#include <vector>

#include "capture/snapshot.hpp"

namespace kerncap::capture {

void tag_region_devices(std::vector<RegionState>& regions);

}  // namespace kerncap::capture
