#pragma once
// The reproducer of a window of launches (issue 36, docs/window.md): written beside the capture
// of `kerncap window extract` (OUT/capture, with its window.json), or again from an existing
// window capture by `kerncap window reproducer OUT`:
//   README.md   the window's operations in order (kind, kernel, grid/block, in-app time and
//               share), the memory, the kernels and their images, how to replay, time, validate
//               and substitute kernels (--swap INDEX=FILE, --live-out)
//   Makefile    help | run | time | validate | info
// The same generator as the one-launch reproducer (reproducer/render.hpp: the templates, quoting
// and Markdown escaping; files written privately through common/private_files.hpp). Everything
// taken from the capture (kernel names, the window's patterns, the command, the device) is
// untrusted: it reaches the Makefile only as comments and quoted echo text, never as a word
// of a command, and the README only escaped.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "format/capture_dir.hpp"
#include "format/window.hpp"

namespace kerncap::reproducer {

namespace fs = std::filesystem;

struct WindowRequest {
  fs::path out;      // OUT; the window capture must be complete in OUT/capture
  fs::path kerncap;  // the binary the Makefile calls (absolute); empty: `kerncap` from PATH
};

struct WindowGenerated {
  fs::path makefile, readme;
  std::vector<std::string> notes;  // for the terminal
};

// Opens OUT/capture and its window.json (Error(Input) when it is not a window capture) and
// writes OUT/Makefile and OUT/README.md.
WindowGenerated generate_window_reproducer(const WindowRequest& request);
// The same from a capture and window already read (`kerncap window extract`).
WindowGenerated generate_window_reproducer(const WindowRequest& request, const format::Capture& capture,
                                           const format::Window& window);

// ---- pieces, shared with `kerncap window` and the tests ----

// One operation for people: a kernel's demangled name; "memset 256 x 4 B of 0x0 at 0x7f..."; "copy
// 4096 B 0x... -> 0x...". Untrusted text (a kernel name): escape it for where it goes.
std::string window_op_name(const format::WindowOp& op);
// " [stream K]" for an operation of another of the window's streams and for event operations,
// "" otherwise: appended where people read the operations (README, Makefile, window info), kept
// out of the name (JSON has "stream").
std::string window_op_stream(const format::WindowOp& op);
// Its shape: "(64, 1, 1) x (256, 1, 1)" (plus dynamic shared memory) for a kernel, the bytes
// written for a memset or a copy.
std::string window_op_shape(const format::WindowOp& op);

// Each operation's in-app time as a share (0..1) of the sum of the operations' in-app times
// (the kernels' sum, in_app_kernels_ns, when every kernel was timed): absent for an operation
// without a time. The shares of the timed operations add up to 1.
struct WindowShares {
  std::vector<std::optional<double>> share;  // per operation
  uint64_t timed_ns = 0;                     // the sum they are shares of
  size_t kernels = 0, kernels_timed = 0;
};
WindowShares window_shares(const format::Window& w);

// The kernel op with the largest in-app time (the first kernel when none was timed): the
// README's example of a substitution.
size_t window_hottest_kernel(const format::Window& w);

// The files' text (OUT's files are written by generate_window_reproducer).
std::string window_readme(const format::Capture& capture, const format::Window& w, const fs::path& kerncap);
std::string window_makefile(const format::Capture& capture, const format::Window& w, const fs::path& kerncap);

}  // namespace kerncap::reproducer
