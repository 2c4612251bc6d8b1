#pragma once
// Which GPU a replay runs on: `--device N`, else the first visible device of the captured
// model and compute capability, else the captured ordinal. A device of another compute
// capability is refused before any context is created: the captured code image is compiled
// for one architecture, and a replay elsewhere would either not load or measure something
// else. A pure decision over a list of devices, so unit tests feed it fake ones.
#include <optional>
#include <string>
#include <vector>

#include "format/manifest.hpp"

namespace kerncap::replay {

struct DeviceDesc {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  std::string uuid;  // "GPU-..." ("" when the driver did not say)
};

struct DeviceChoice {
  int ordinal = 0;
  std::string why;  // "as asked (--device 1)", "same model as captured", ...
  bool same_gpu = false;  // the very GPU of the capture (its UUID)
  std::string name;
  int driver_version = 0;  // this machine's (cuDriverGetVersion; 0: not asked)
  // "device 1 (NVIDIA H100 80GB HBM3): as asked (--device 1); the captured GPU was device 0",
  // and what differs from the capture's machine where timings may not compare: another model
  // of the captured architecture, another driver.
  std::string line(const format::Manifest& m) const;
};

// Throws Error(Usage) for --device past the visible devices, Error(Device) when none is
// visible, Error(Input) when the chosen device's compute capability differs from the
// capture's (naming both and the devices that would do).
DeviceChoice choose_device(const format::Manifest& m, const std::vector<DeviceDesc>& visible,
                           std::optional<int> requested);

// The visible devices, from the driver (cuInit already called); no context is created.
std::vector<DeviceDesc> visible_devices();

}  // namespace kerncap::replay
