#pragma once
// Profile mode of the injected library: CUPTI activity records of every kernel,
// written per process under Config::output at exit.
#include "capture/config.hpp"

namespace kerncap::capture {

// Called once from InitializeInjection in profile mode. Returns false (and
// logs why) when profiling cannot start; the application then runs untouched.
bool start_profiler(const Config& config);

// The Triton shim's benchmark window in profile mode (kerncap_ignore_begin/end): the calling
// thread's API calls until the matching end are marked as benchmark launches in the records.
// No-ops when the profiler is not collecting; never throw.
void profile_benchmark_begin() noexcept;
void profile_benchmark_end() noexcept;

}  // namespace kerncap::capture
