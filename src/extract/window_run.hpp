#pragma once
// `kerncap window extract` without the printing: the application run once with the capture
// library in window mode (Config::window_end), every tracked region kept (--closure all: the
// later launches' pointers are not known at the window's start), then the capture and its
// window.json opened and checked, and the window's reproducer (Makefile, README.md) written
// beside it (reproducer/window_reproducer.hpp). docs/window.md.
#include <cstdint>
#include <string>

#include "extract/capture_run.hpp"
#include "format/window.hpp"
#include "reproducer/window_reproducer.hpp"

namespace kerncap::extract {

struct WindowEndSpec {
  std::string kernel;     // the pattern of the window's last launch
  uint64_t dispatch = 0;  // its Nth match from the window's first launch, on that launch's stream
  // Or a window of one CUDA graph launch (`--graph`): the Nth launch (from 0) of the graphs
  // holding a kernel matching graph_kernel (empty: every graph launch counts).
  bool graph = false;
  std::string graph_kernel;
  uint64_t graph_launch = 0;
  // Or a window of one NVTX range (`--range`): the Nth push (from 0) of a range named range
  // (window_nvtx.hpp says how a name matches), from its first kernel launch to its pop.
  bool range = false;
  std::string range_name;
  uint64_t range_push = 0;
};

// "FROM[@N]..TO[@M]" -> the first launch (r.kernel, r.dispatch) and the end. Error(Usage).
WindowEndSpec parse_window_spec(const std::string& text, Request* r);
// "N", "PATTERN@N" or "PATTERN" (N = 0) -> a graph launch's window. Error(Usage).
WindowEndSpec parse_graph_spec(const std::string& text, bool regex);
// "NAME@N" or "NAME" (N = 0) -> an NVTX range's window. Error(Usage).
WindowEndSpec parse_range_spec(const std::string& text, bool regex);

struct WindowResult {
  fs::path out;
  format::Capture capture;
  format::Window window;
  AppExit app;
  bool stopped = false;
  reproducer::WindowGenerated reproducer;
};

// Throws Error(Usage) for a bad request, Error(Input) when no window was captured (why). The
// reproducer is written with r.kerncap as the binary its Makefile calls.
WindowResult run_window(const Request& r, const WindowEndSpec& end);

}  // namespace kerncap::extract
