#pragma once
// The comparison's device check (uniform_check.cu) compiled for each architecture and
// embedded at build time (cmake/embed_fatbin.cmake); empty when kerncap was built without
// nvcc (uniform_image_unavailable.cpp).
#include <span>

namespace kerncap::replay {

std::span<const unsigned char> uniform_image();

}  // namespace kerncap::replay
