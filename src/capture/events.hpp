#pragma once
// The library's side of the events file (format/events.hpp: the kinds, their fields and
// the file's place): opening it once and appending lines built by format::events.
#include <string>

#include <nlohmann/json.hpp>

#include "format/events.hpp"

namespace kerncap::capture {

void events_open(const std::string& output_dir);
void emit(nlohmann::json event);  // adds "pid"; never throws

// Several targets: while one lives, the error and captured lines this thread emits name
// that target (format/events.hpp), so that Capturer and GraphCapturer need not know.
class EventTargetScope {
 public:
  explicit EventTargetScope(int target);  // -1: one target, nothing is added
  ~EventTargetScope();
  EventTargetScope(const EventTargetScope&) = delete;
  EventTargetScope& operator=(const EventTargetScope&) = delete;

 private:
  int previous_;
};

}  // namespace kerncap::capture
