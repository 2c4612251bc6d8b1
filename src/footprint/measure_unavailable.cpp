// Built instead of measure.cpp when the Compute Sanitizer API headers were not found at
// configure time: the rest of kerncap works, `kerncap footprint` says what to do.
#include "common/error.hpp"
#include "footprint/footprint.hpp"

namespace kerncap::footprint {

bool built_with_sanitizer() { return false; }

format::Footprint measure(const MeasureOptions& o) {
  format::open_capture(o.capture);  // input errors first, as in the real build
  usage_error(
      "footprint needs libsanitizer-public.so, and this kerncap was built without the Compute Sanitizer API: run "
      "scripts/install-deps.sh (it installs the nvidia-cuda-sanitizer-api package), then reconfigure the build "
      "(cmake -DKERNCAP_SANITIZER_ROOT=<dir with include/sanitizer.h and lib/libsanitizer-public.so>) and rebuild");
}

}  // namespace kerncap::footprint
