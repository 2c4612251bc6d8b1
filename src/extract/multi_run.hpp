#pragma once
// `kerncap extract` with several targets (targets.hpp has the layout): prepare OUT and one
// directory per target, run the application once with every target in KERNCAP_TARGETS,
// then, for each target, either write its reproducer or say why it has no capture; write
// OUT/targets.json. The application stops after the last target's capture (--continue:
// it runs to its end); a target never reached leaves the others in place.
#include <vector>

#include "extract/capture_run.hpp"

namespace kerncap::extract {

struct TargetResult {
  TargetOutcome outcome;
  fs::path dir;               // absolute
  format::Capture capture;    // when outcome.captured
  Outcome reproducer;         // when outcome.captured
};

struct MultiResult {
  fs::path out;
  std::vector<TargetResult> targets;
  AppExit app;
  bool stopped = false;  // the library ended the application after the last capture
  size_t missing() const {
    size_t n = 0;
    for (const auto& t : targets) n += !t.outcome.captured;
    return n;
  }
};

// Throws Error(Usage) for a bad request and Error(Input) when the library speaks another
// protocol; targets without a capture are in the result (outcome.why), not thrown.
MultiResult run_captures(const Request& r);

// The error for a run with targets missing: which ones and why (Error(Input)).
[[noreturn]] void fail_missing(const MultiResult& res);

}  // namespace kerncap::extract
