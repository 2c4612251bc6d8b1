#pragma once
// Peer memory at the target launch: which captured regions live on another GPU than the
// launch's, and which of those the kernel's parameters point into directly. Regions are
// tagged in the manifest either way (format::Region::device); the parameter scan is what
// the capture log tells the user ("the kernel reads device 1's memory through parameter
// 2"). Pure: the devices come in already asked (region_devices.cpp asks the driver).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "format/manifest.hpp"

namespace kerncap::capture {

struct PeerReference {
  uint32_t param = 0;   // parameter slot index
  uint32_t region = 0;  // region id
  int device = -1;
};

// Each 8-byte-aligned word of each parameter slot that points into a region of a device
// other than `launch_device`.
std::vector<PeerReference> peer_references(std::span<const uint8_t> params, const std::vector<format::ParamSlot>& slots,
                                           const std::vector<format::Region>& regions, int launch_device);

// The capture log's line, "" when no region is another device's.
std::string peer_summary(const std::vector<format::Region>& regions, int launch_device,
                         const std::vector<PeerReference>& refs);

}  // namespace kerncap::capture
