#pragma once
// The fuzz targets. Each writes one mutated input into a fresh work directory (in the
// parent, so a finding can be saved as it was), then runs the code under test on it (in a
// forked child). A child exits 0 when the input was accepted, 2 when it was refused with
// Error(Input/Usage), 70 for Error(Internal) or any other exception ("internal error" in
// the CLI), or dies (sanitizer report, crash, timeout).
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "mutate.hpp"
#include "serve/protocol.hpp"

namespace kerncap::fuzz {

namespace fs = std::filesystem;

inline constexpr int kAccepted = 0, kRefused = 2, kInternal = 70;

// Runs `body` and maps its outcome to one of those codes: a typed error (or a serve protocol
// error) is a refusal, Error(Internal) or any other exception an internal error (said on stderr).
template <class F>
int guarded(F&& body) {
  try {
    body();
    return kAccepted;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Internal) return kRefused;
    std::fprintf(stderr, "internal error: %s\n", e.what());
  } catch (const serve::ProtocolError&) {
    return kRefused;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error (%s)\n", e.what());
  }
  return kInternal;
}

// A capture directory as files (relative path -> bytes).
using CaptureFiles = std::map<std::string, Bytes>;

struct Seeds {
  std::vector<Bytes> code_objects;       // cubins, fatbins, PTX
  std::vector<CaptureFiles> captures;    // OUT/capture trees
  fs::path sentinel;                     // files no target may touch (outside the work dir)
};

struct Target {
  std::string name;
  void (*prepare)(const Seeds&, Rng&, const fs::path& work);
  int (*run)(const fs::path& work);
  // CPU seconds a child may use before it counts as hung; 0: the fuzzer's --cpu-seconds.
  // More for targets fed lists of 100,000 entries (issue 38's hangs took minutes; the
  // sanitized build reads such a list in about a second).
  unsigned cpu_seconds = 0;
};

const std::vector<Target>& all_targets();

// Seeds: the fixture code objects in `fixture_dir` (may be absent) and small captures
// written by the unit tests' helper (tests/unit/scratch_capture.hpp).
Seeds load_seeds(const fs::path& fixture_dir, const fs::path& scratch, const fs::path& sentinel);

}  // namespace kerncap::fuzz
