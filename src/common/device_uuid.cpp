#include "common/device_uuid.hpp"

#include <cstring>

#include <fmt/format.h>

#include "common/driver.hpp"

namespace kerncap {

std::string uuid_text(const std::array<uint8_t, 16>& b) {
  std::string s = "GPU-";
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", b[i]);
  }
  return s;
}

std::string device_uuid(CUdevice dev) {
  CUuuid u{};
  if (KC_CU_TRY(cuDeviceGetUuid(&u, dev)) != CUDA_SUCCESS) return "";
  std::array<uint8_t, 16> b{};
  std::memcpy(b.data(), u.bytes, b.size());
  return uuid_text(b);
}

}  // namespace kerncap
