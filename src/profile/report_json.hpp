#pragma once
// profile.json (`--output`, and `--json` on stdout): everything the table shows with
// full names, plus per-process sections and each kernel's `extract --dispatch` indices.
// Versioned: "format": "kerncap-profile", "version": kReportVersion.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/aggregate.hpp"

namespace kerncap::profile {

inline constexpr int kReportVersion = 1;
inline constexpr const char* kReportFormat = "kerncap-profile";

// How the profiled application ended (absent when records were analyzed with --from).
struct RunInfo {
  std::vector<std::string> command;
  bool ran = false;
  bool exited = true;  // else killed by a signal
  int code = 0;        // exit code or signal number
  std::string description;
};

nlohmann::json report_json(const Summary& s, const RunInfo& run);

}  // namespace kerncap::profile
