#pragma once
// The JSON documents the CLI prints and their versions, in one place: `kerncap env --json`
// lists them ("documents") so that readers in other languages (the Python package's
// KNOWN_FORMATS) are checked against the writer instead of keeping a copy that drifts.
#include <nlohmann/json.hpp>

#include "format/footprint.hpp"
#include "cli/validate_regimes.hpp"
#include "format/manifest.hpp"
#include "extract/swap_run.hpp"
#include "format/regime_kernels.hpp"
#include "format/regimes_index.hpp"
#include "lint/baseline.hpp"
#include "profile/report_json.hpp"
#include "replay/judge.hpp"

namespace kerncap::cli {

inline constexpr int kLocateVersion = 1;       // `kerncap locate --json`
inline constexpr int kServeStatusVersion = 1;  // `kerncap serve --status --json`

// {"kerncap-capture": {"field": "format_version", "version": 4}, ...}
inline nlohmann::json document_versions() {
  auto doc = [](const char* field, int version) { return nlohmann::json{{"field", field}, {"version", version}}; };
  return {{format::kFormatName, doc("format_version", format::kFormatVersion)},
          {format::kFootprintName, doc("format_version", format::kFootprintVersion)},
          {profile::kReportFormat, doc("version", profile::kReportVersion)},
          {"kerncap-baseline", doc("version", lint::kBaselineVersion)},
          {"kerncap-locate", doc("version", kLocateVersion)},
          {"kerncap-serve-status", doc("version", kServeStatusVersion)},
          {replay::kVerdictFormat, doc("version", replay::kVerdictVersion)},
          {std::string(format::kRegimesFormat), doc("version", format::kRegimesVersion)},
          {kRegimeVerdictFormat, doc("version", kRegimeVerdictVersion)},
          {std::string(format::kRegimeKernelsFormat), doc("version", format::kRegimeKernelsVersion)},
          {kRegimeKernelsVerdictFormat, doc("version", kRegimeKernelsVerdictVersion)},
          {std::string(extract::kRunReportFormat), doc("version", extract::kRunReportVersion)}};
}

}  // namespace kerncap::cli
