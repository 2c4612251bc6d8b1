#pragma once
// The SM clock through NVML, so a timing shows whether the GPU throttled. NVML comes with
// the driver (libnvidia-ml.so.1) and is loaded at run time; without it the clock is
// "unknown" and timing goes on.
#include <string>

#include <nlohmann/json.hpp>

namespace kerncap::replay {

struct SmClock {
  bool known = false;
  unsigned mhz = 0;
  unsigned max_mhz = 0;
  std::string why;  // when unknown
};

// The current and maximum SM clock of the GPU at `pci_bus_id` (cuDeviceGetPCIBusId's text).
// `library` is the NVML to load (tests name one that does not exist). Never throws.
SmClock read_sm_clock(const std::string& pci_bus_id, const char* library = "libnvidia-ml.so.1");
// The PCI bus id of the current context's device ("" when there is none).
std::string current_pci_bus_id();

// "SM clock 1980 MHz before, 1755 MHz after (max 1980 MHz)" or "clock: unknown (why)".
std::string clock_text(const SmClock& before, const SmClock& after);
// {"known": true, "sm_mhz_before", "sm_mhz_after", "sm_max_mhz"} or {"known": false, "why"}.
nlohmann::json clock_json(const SmClock& before, const SmClock& after);

}  // namespace kerncap::replay
