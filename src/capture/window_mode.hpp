#pragma once
// Capture mode with a window of launches (Config::window_end, docs/window.md): wires the
// watcher, the window recorder and the capturer, and subscribes to CUPTI. Called by
// InitializeInjection in place of the one-launch capture mode.
#include "capture/config.hpp"

namespace kerncap::capture {

void start_window_capture(const Config& config);

}  // namespace kerncap::capture
