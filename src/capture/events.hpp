#pragma once
// The library's side of the events file (format/events.hpp: the kinds, their fields and
// the file's place): opening it once and appending lines built by format::events.
#include <string>

#include <nlohmann/json.hpp>

#include "format/events.hpp"

namespace kerncap::capture {

void events_open(const std::string& output_dir);
void emit(nlohmann::json event);  // adds "pid"; never throws

}  // namespace kerncap::capture
