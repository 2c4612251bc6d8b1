#pragma once
// `--trace trace.json`: Chrome trace-event format (opens in Perfetto and chrome://tracing).
// One complete ("X") event per kernel launch, cat "kernel", pid = process, tid = CUDA
// stream; memcpy/memset as X events of cat "memcpy"/"memset"; names via metadata events.
// Times are microseconds from the first recorded activity.
#include <filesystem>
#include <ostream>
#include <vector>

#include "format/profile_records.hpp"

namespace kerncap::profile {

void write_trace(const std::vector<format::ProcessRecords>& processes, std::ostream& out);
// Throws Error(Usage) when the file cannot be written.
void write_trace_file(const std::vector<format::ProcessRecords>& processes, const std::filesystem::path& file);

}  // namespace kerncap::profile
