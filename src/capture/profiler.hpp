#pragma once
// Profile mode of the injected library: CUPTI activity records of every kernel,
// written per process under Config::output at exit.
#include "capture/config.hpp"

namespace kerncap::capture {

// Called once from InitializeInjection in profile mode. Returns false (and
// logs why) when profiling cannot start; the application then runs untouched.
bool start_profiler(const Config& config);

}  // namespace kerncap::capture
