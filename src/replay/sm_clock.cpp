#include "replay/sm_clock.hpp"

#include <dlfcn.h>

#include <chrono>
#include <list>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "common/driver.hpp"

namespace kerncap::replay {
namespace {

// The few NVML declarations we use (nvml.h is not part of every toolkit install).
using nvmlReturn = int;
using nvmlDevice = struct nvmlDevice_st*;
constexpr nvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;

struct Nvml {
  nvmlReturn (*init)() = nullptr;
  nvmlReturn (*by_bus_id)(const char*, nvmlDevice*) = nullptr;
  nvmlReturn (*clock)(nvmlDevice, int, unsigned*) = nullptr;
  nvmlReturn (*max_clock)(nvmlDevice, int, unsigned*) = nullptr;
  std::string error;
};

Nvml load(const char* library) {
  Nvml n;
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    n.error = fmt::format("cannot load {}", library);
    return n;
  }
  n.init = reinterpret_cast<decltype(n.init)>(dlsym(lib, "nvmlInit_v2"));
  n.by_bus_id = reinterpret_cast<decltype(n.by_bus_id)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  n.clock = reinterpret_cast<decltype(n.clock)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
  n.max_clock = reinterpret_cast<decltype(n.max_clock)>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
  if (!n.init || !n.by_bus_id || !n.clock || !n.max_clock) {
    n.error = fmt::format("{} lacks the clock queries", library);
    return n;
  }
  if (nvmlReturn r = n.init(); r != kNvmlSuccess) n.error = fmt::format("nvmlInit failed ({})", r);
  return n;
}

// One NVML per library name for the process (loaded and initialised on first use).
const Nvml& nvml(const char* library) {
  static std::mutex mu;
  static std::list<std::pair<std::string, Nvml>> loaded;  // a list: references stay valid
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [name, n] : loaded)
    if (name == library) return n;
  loaded.emplace_back(library, load(library));
  return loaded.back().second;
}

}  // namespace

SmClock read_sm_clock(const std::string& pci_bus_id, const char* library) {
  SmClock c;
  if (pci_bus_id.empty()) {
    c.why = "no device";
    return c;
  }
  const Nvml& n = nvml(library);
  if (!n.error.empty()) {
    c.why = n.error;
    return c;
  }
  // The handle of a bus id and its maximum clock, looked up once (the lookup walks NVML's
  // devices; a timing reads the clock before and after, evaluation after evaluation).
  struct Known {
    nvmlDevice dev = nullptr;
    unsigned max_mhz = 0;
  };
  static std::mutex handles_mu;
  static std::map<std::pair<std::string, std::string>, Known> handles;
  Known k;
  {
    std::lock_guard<std::mutex> lock(handles_mu);
    const auto key = std::make_pair(std::string(library), pci_bus_id);
    if (auto it = handles.find(key); it != handles.end()) {
      k = it->second;
    } else {
      if (nvmlReturn r = n.by_bus_id(pci_bus_id.c_str(), &k.dev); r != kNvmlSuccess) {
        c.why = fmt::format("NVML does not know the GPU at {} ({})", pci_bus_id, r);
        return c;
      }
      if (n.max_clock(k.dev, kNvmlClockSm, &k.max_mhz) != kNvmlSuccess) {
        c.why = "NVML cannot read the SM clock";
        return c;
      }
      handles.emplace(key, k);
    }
  }
  if (n.clock(k.dev, kNvmlClockSm, &c.mhz) != kNvmlSuccess) {
    c.why = "NVML cannot read the SM clock";
    return c;
  }
  c.max_mhz = k.max_mhz;
  c.known = true;
  return c;
}

SmClock recent_sm_clock(const std::string& pci_bus_id, double max_age_s, const char* library) {
  using Clock = std::chrono::steady_clock;
  struct Last {
    SmClock clock;
    Clock::time_point at;
  };
  static std::mutex mu;
  static std::map<std::pair<std::string, std::string>, Last> last;
  const auto key = std::make_pair(std::string(library), pci_bus_id);
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = last.find(key); it != last.end()) {
      const double age = std::chrono::duration<double>(now - it->second.at).count();
      if (age <= max_age_s) {
        SmClock c = it->second.clock;
        c.age_s = age;
        return c;
      }
    }
  }
  SmClock c = read_sm_clock(pci_bus_id, library);
  std::lock_guard<std::mutex> lock(mu);
  last[key] = {c, now};  // an unknown clock too: NVML that failed once is not asked again at once
  return c;
}

std::string current_pci_bus_id() {
  CUdevice dev = 0;
  if (KC_CU_TRY(cuCtxGetDevice(&dev)) != CUDA_SUCCESS || !driver().cuDeviceGetPCIBusId) return "";
  char id[64] = {};
  if (KC_CU_TRY(cuDeviceGetPCIBusId(id, sizeof id, dev)) != CUDA_SUCCESS) return "";
  return id;
}

std::string clock_text(const SmClock& before, const SmClock& after) {
  if (!before.known || !after.known) {
    const std::string& why = before.known ? after.why : before.why;
    return why.empty() ? "clock: unknown" : fmt::format("clock: unknown ({})", why);
  }
  return fmt::format("SM clock {} MHz before, {} MHz after (max {} MHz)", before.mhz, after.mhz, after.max_mhz);
}

nlohmann::json clock_json(const SmClock& before, const SmClock& after) {
  if (!before.known || !after.known)
    return {{"known", false}, {"why", before.known ? after.why : before.why}};
  return {{"known", true},          {"sm_mhz_before", before.mhz}, {"sm_mhz_after", after.mhz},
          {"sm_max_mhz", after.max_mhz}, {"age_s_before", before.age_s}, {"age_s_after", after.age_s}};
}

}  // namespace kerncap::replay
