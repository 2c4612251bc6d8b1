#include "replay/device_choice.hpp"

#include <fmt/format.h>

#include "common/device_uuid.hpp"
#include "common/driver.hpp"
#include "common/error.hpp"

namespace kerncap::replay {
namespace {

bool same_arch(const DeviceDesc& d, const format::Manifest& m) {
  return d.cc_major == m.cc_major && d.cc_minor == m.cc_minor;
}

std::string describe(const DeviceDesc& d) {
  return fmt::format("device {} ({}, sm_{}{})", d.ordinal, d.name.empty() ? "unnamed" : d.name, d.cc_major,
                     d.cc_minor);
}

}  // namespace

DeviceChoice choose_device(const format::Manifest& m, const std::vector<DeviceDesc>& visible,
                           std::optional<int> requested) {
  if (visible.empty()) device_error("no CUDA device is visible (check CUDA_VISIBLE_DEVICES)");
  DeviceChoice c;
  if (requested) {
    if (*requested < 0 || static_cast<size_t>(*requested) >= visible.size())
      usage_error(fmt::format("--device {}: this machine shows {} CUDA device(s), 0..{} (after CUDA_VISIBLE_DEVICES)",
                              *requested, visible.size(), visible.size() - 1));
    c.ordinal = *requested;
    c.why = fmt::format("as asked (--device {})", *requested);
  } else {
    const DeviceDesc* pick = nullptr;
    for (const auto& d : visible)
      if (!pick && same_arch(d, m) && d.name == m.device_name) pick = &d;
    if (pick) c.why = "the first of the captured model";
    for (const auto& d : visible)
      if (!pick && same_arch(d, m)) {
        pick = &d;
        c.why = "the first of the captured compute capability";
      }
    if (pick) {
      c.ordinal = pick->ordinal;
    } else {
      c.ordinal = m.device_ordinal < static_cast<int>(visible.size()) ? m.device_ordinal : 0;
      c.why = "the captured ordinal";
    }
  }
  const DeviceDesc& d = visible[static_cast<size_t>(c.ordinal)];
  c.same_gpu = !m.device_uuid.empty() && d.uuid == m.device_uuid;
  c.name = d.name;
  if (!same_arch(d, m)) {
    std::string fits;
    for (const auto& v : visible)
      if (same_arch(v, m)) fits += (fits.empty() ? "" : ", ") + std::to_string(v.ordinal);
    input_error(fmt::format(
        "the capture was taken on sm_{}{} ({}) but {} is another architecture: its code image is built for the "
        "capture's GPU and a replay here would not load or would measure a different machine. {}",
        m.cc_major, m.cc_minor, m.device_name.empty() ? "unnamed" : m.device_name, describe(d),
        fits.empty() ? fmt::format("Replay it on an sm_{}{} GPU (none is visible here)", m.cc_major, m.cc_minor)
                     : fmt::format("Devices here of the captured architecture: {} (--device N)", fits)));
  }
  return c;
}

std::string DeviceChoice::line(const format::Manifest& m) const {
  std::string s = fmt::format("device {} ({}): {}", ordinal, name.empty() ? "unnamed" : name, why);
  if (same_gpu) {
    s += "; the GPU of the capture";
  } else {
    s += fmt::format("; captured on device {} of the application", m.device_ordinal);
    if (!m.device_name.empty() && m.device_name != name)
      s += fmt::format(", another model ({}): its timings do not compare with this one's", m.device_name);
  }
  // Driver versions are major * 1000 + minor * 10 (13000 is 13.0).
  if (driver_version > 0 && m.driver_version > 0 && driver_version != m.driver_version)
    s += fmt::format("; captured under driver {}.{}, replayed under {}.{}", m.driver_version / 1000,
                     m.driver_version % 1000 / 10, driver_version / 1000, driver_version % 1000 / 10);
  return s;
}

std::vector<DeviceDesc> visible_devices() {
  int count = 0;
  KC_CU(cuDeviceGetCount(&count));
  std::vector<DeviceDesc> out;
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    KC_CU(cuDeviceGet(&dev, i));
    DeviceDesc d;
    d.ordinal = i;
    char name[256] = {};
    if (KC_CU_TRY(cuDeviceGetName(name, sizeof(name), dev)) == CUDA_SUCCESS) d.name = name;
    KC_CU(cuDeviceGetAttribute(&d.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    KC_CU(cuDeviceGetAttribute(&d.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    d.uuid = device_uuid(dev);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace kerncap::replay
