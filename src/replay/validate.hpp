#pragma once
// Compare what a replay left in memory with what the application's launch left: for
// every region, expected = BEFORE overlaid with the AFTER runs (pointer words into moved
// spans rewritten the same way as the restore), actual = the replay's device memory.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.hpp"
#include "replay/session.hpp"

namespace kerncap::replay {

struct RegionVerdict {
  uint32_t id = 0;
  std::string kind;
  uint64_t base = 0, size = 0;
  uint64_t written = 0;  // bytes the application's launch changed in it
  compare::Result result;
};

struct Verdict {
  std::vector<RegionVerdict> regions;
  bool pass() const;
  uint64_t failing() const;
  uint64_t exact() const;
  std::string line() const;  // "Result: PASS (...)" / "Result: FAIL (...)"
  nlohmann::json to_json() const;
};

Verdict compare_with_after(Session& session, compare::DType dtype = compare::DType::Bytes,
                           compare::Tolerance tol = {});

}  // namespace kerncap::replay
