#pragma once
// One validation, start to end: open, restore, launch, compare with AFTER; when that fails
// and no spec was forced, check whether the captured kernel is deterministic (two replays of
// the captured image) and, where it is not, compare again with the element types of its
// signature and their default tolerance (or `tolerances`' entry). With invariants, they are
// checked on the final replay's written bytes. Used by `kerncap validate` and `kerncap-replay`.
#include <optional>
#include <string>

#include "replay/address_space.hpp"
#include "format/footprint.hpp"
#include "replay/compare_spec.hpp"
#include "replay/session.hpp"
#include "replay/validate.hpp"

namespace kerncap::replay {

struct ValidateRequest {
  Options session;
  std::optional<CompareSpec> spec;  // forced by the user; else default_spec
  bool check_determinism = true;
  // The capture's measured footprint: validation is strong (write-only bytes poisoned).
  const format::Footprint* footprint = nullptr;
  // Invariants of the bytes the launch writes (a violation fails the verdict).
  compare::Invariants invariants;
  // Tolerances: per dtype instead of the default table (OUT/kerncap.toml [tolerances]), and
  // per region (--tolerance), applied to every spec the flow compares with.
  ToleranceTable tolerances;
  std::vector<RegionTolerance> region_tolerances;
};

struct ValidateReport {
  Verdict verdict;
  CompareSpec spec;          // what the final verdict compared with
  RestoreStats restore;
  PlacementStats placement;
  std::string kernel, image;
  std::string device;  // DeviceChoice::line: where it ran and why
  int device_ordinal = 0;
  bool determinism_checked = false;
};

ValidateReport validate(const ValidateRequest& request);

// ValidateReport::device for a session: where it runs and why, and a peer-access note.
std::string device_line(const Session& s);

}  // namespace kerncap::replay
