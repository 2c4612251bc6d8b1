#pragma once
// The library's report to the launcher: OUT/.kerncap/events-<pid>.jsonl, one JSON object
// per line, appended with O_APPEND so a crash loses at most the line being written.
// Events: start, seen (a kernel name seen for the first time), skipped, error, captured.
#include <string>

#include <nlohmann/json.hpp>

namespace kerncap::capture {

void events_open(const std::string& output_dir);
void emit(nlohmann::json event);  // never throws

}  // namespace kerncap::capture
