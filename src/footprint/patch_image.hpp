#pragma once
// The device patch (patch.cu compiled as a Compute Sanitizer tools patch), embedded at
// build time. Only present when kerncap was built with the sanitizer API.
#include <span>

namespace kerncap::footprint {

// The fatbin, with kerncap_footprint_access for each architecture kerncap was built for.
std::span<const unsigned char> patch_image();
inline constexpr const char* kPatchFunction = "kerncap_footprint_access";

}  // namespace kerncap::footprint
