#pragma once
// Profile mode of the injected library: CUPTI activity records of every kernel,
// written per process under KERNCAP_OUTPUT at exit.
#include "capture/config.hpp"

namespace kerncap::capture {

// Called once from InitializeInjection when KERNCAP_MODE=profile. Returns false (and
// logs why) when profiling cannot start; the application then runs untouched.
bool start_profiler(const Config& config);

}  // namespace kerncap::capture
