#pragma once
// The snapshot's device scan (scan_kernel.cu compiled into a fatbin), embedded at build
// time. Empty when kerncap was built without nvcc: snapshots then read every byte.
#include <span>

namespace kerncap::capture {

std::span<const unsigned char> scan_image();
inline constexpr const char* kScanFunction = "kerncap_scan";
inline constexpr const char* kReachFunction = "kerncap_reach";

}  // namespace kerncap::capture
