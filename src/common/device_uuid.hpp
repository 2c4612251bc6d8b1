#pragma once
// A GPU's UUID as nvidia-smi -L and CUDA_VISIBLE_DEVICES spell it ("GPU-8-4-4-4-12" hex
// digits): recorded in the capture, shown by replay, the same text on both sides.
#include <cuda.h>

#include <array>
#include <cstdint>
#include <string>

namespace kerncap {

std::string uuid_text(const std::array<uint8_t, 16>& bytes);
// "" when the driver cannot tell.
std::string device_uuid(CUdevice dev);

}  // namespace kerncap
