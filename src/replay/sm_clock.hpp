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
  double age_s = 0;  // how old the reading was when it was used (recent_sm_clock)
  std::string why;   // when unknown
};

// The current and maximum SM clock of the GPU at `pci_bus_id` (cuDeviceGetPCIBusId's text),
// read now (the maximum, which never changes, once per GPU). `library` is the NVML to load
// (tests name one that does not exist). Never throws.
SmClock read_sm_clock(const std::string& pci_bus_id, const char* library = "libnvidia-ml.so.1");
// read_sm_clock's answer, or the last one of the same GPU when it is at most `max_age_s` old
// (age_s says how old). NVML's clock query goes to the driver (on an H200 about half a
// millisecond); a loop that times candidate after candidate reads it once per `max_age_s`
// instead of twice per timing; a throttled GPU stays throttled far longer than that.
SmClock recent_sm_clock(const std::string& pci_bus_id, double max_age_s, const char* library = "libnvidia-ml.so.1");
// How old a reading recent_sm_clock may hand out in a timing: the clock before and after a
// timing shorter than this may be one reading.
inline constexpr double kSmClockMaxAge = 0.5;
// The PCI bus id of the current context's device ("" when there is none).
std::string current_pci_bus_id();

// "SM clock 1980 MHz before, 1755 MHz after (max 1980 MHz)" or "clock: unknown (why)".
std::string clock_text(const SmClock& before, const SmClock& after);
// {"known": true, "sm_mhz_before", "sm_mhz_after", "sm_max_mhz", "age_s_before", "age_s_after"}
// or {"known": false, "why"}.
nlohmann::json clock_json(const SmClock& before, const SmClock& after);

}  // namespace kerncap::replay
