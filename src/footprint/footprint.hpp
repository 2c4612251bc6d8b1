#pragma once
// The footprint library: measure which bytes a captured launch reads and writes (an
// instrumented replay through the Compute Sanitizer API), and find a measured footprint
// for other parts of kerncap (validation poisons the bytes written without being read).
#include <cstdint>
#include <filesystem>
#include <optional>

#include "format/capture_dir.hpp"
#include "format/footprint.hpp"

namespace kerncap::footprint {

// The capture's footprint when one was measured for it; nullopt when none was. Throws
// Error(Input) when the files are damaged or belong to another capture (re-measure).
std::optional<format::Footprint> load_or_none(const format::Capture& capture);

// Error(Input) unless the footprint was measured on this capture (kernel, image, regions).
void check_matches(const format::Footprint& f, const format::Manifest& m);

struct MeasureOptions {
  std::filesystem::path capture;                           // OUT or OUT/capture
  std::optional<std::filesystem::path> sanitizer_library;  // else found (see docs/footprint.md)
  uint64_t max_escapes = 1024;                             // escape records kept (all are counted)
  bool timing = true;  // also time an uninstrumented launch (two more restores and launches)
  bool progress = true;
};

// Replays the launch once with every global load, store and atomic instrumented.
// Errors: Usage "footprint needs libsanitizer-public.so: ..." when the library cannot be
// loaded or kerncap was built without it; Device when there is no GPU, the sanitizer
// refuses, or the kernel faults under instrumentation.
format::Footprint measure(const MeasureOptions& options);

// Whether this kerncap was built with the sanitizer API (and its device patch embedded).
bool built_with_sanitizer();

}  // namespace kerncap::footprint
