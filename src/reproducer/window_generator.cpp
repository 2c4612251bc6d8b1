// The window's reproducer: what README.md and Makefile share (operation names, shapes, in-app
// shares) and writing them into OUT. The files' text: window_readme.cpp, window_makefile.cpp.
#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/private_files.hpp"
#include "format/out_layout.hpp"
#include "names/demangle.hpp"
#include "reproducer/window_reproducer.hpp"

namespace kerncap::reproducer {

std::string window_op_name(const format::WindowOp& op) {
  switch (op.kind) {
    case format::WindowOp::Kind::Kernel: return names::demangle(op.mangled);
    case format::WindowOp::Kind::Memset:
      return fmt::format("memset {} x {} B of {:#x} at {}", op.width, op.element_size, op.value, hex_addr(op.dst));
    case format::WindowOp::Kind::CopyD2D: return fmt::format("copy {} B {} -> {}", op.bytes, hex_addr(op.src), hex_addr(op.dst));
    case format::WindowOp::Kind::CopyH2D: return fmt::format("copy {} B host -> {}", op.bytes, hex_addr(op.dst));
    case format::WindowOp::Kind::EventRecord: return fmt::format("record event {}", op.event);
    case format::WindowOp::Kind::EventWait: return fmt::format("wait on event {}", op.event);
  }
  return "?";
}

std::string window_op_stream(const format::WindowOp& op) {
  // An operation of another of the window's streams, or an event operation, says which stream
  // (docs/window.md); the window's own stream (0) is not named.
  const bool event = op.kind == format::WindowOp::Kind::EventRecord || op.kind == format::WindowOp::Kind::EventWait;
  return op.stream || event ? fmt::format(" [stream {}]", op.stream) : std::string();
}

std::string window_op_shape(const format::WindowOp& op) {
  switch (op.kind) {
    case format::WindowOp::Kind::Kernel: {
      std::string s = fmt::format("({}, {}, {}) x ({}, {}, {})", op.grid[0], op.grid[1], op.grid[2], op.block[0],
                                  op.block[1], op.block[2]);
      if (op.shared_mem_bytes) s += fmt::format(", {} B shared", op.shared_mem_bytes);
      return s;
    }
    case format::WindowOp::Kind::Memset:
      // The reader bounds width (2^46) and height (2^32); the product is shown as text.
      if (op.height > 1) return fmt::format("{} rows of {} B, pitch {} B", op.height, op.width * op.element_size, op.pitch);
      return human_bytes(op.width * op.element_size);
    case format::WindowOp::Kind::CopyD2D:
    case format::WindowOp::Kind::CopyH2D: return human_bytes(op.bytes);
    case format::WindowOp::Kind::EventRecord:
    case format::WindowOp::Kind::EventWait: return "-";
  }
  return "";
}

WindowShares window_shares(const format::Window& w) {
  WindowShares s;
  s.share.resize(w.ops.size());
  // Summed wide: 65536 operations of up to 2^64 ns each cannot overflow a long double's range,
  // and a crafted capture's times only make a crafted table.
  long double sum = 0;
  for (const auto& op : w.ops) {
    if (op.kind == format::WindowOp::Kind::Kernel) {
      ++s.kernels;
      s.kernels_timed += op.in_app_ns.has_value();
    }
    if (op.in_app_ns) sum += static_cast<long double>(*op.in_app_ns);
  }
  s.timed_ns = sum >= 18446744073709551615.0L ? UINT64_MAX : static_cast<uint64_t>(sum);
  if (sum > 0)
    for (size_t i = 0; i < w.ops.size(); ++i)
      if (w.ops[i].in_app_ns) s.share[i] = static_cast<double>(static_cast<long double>(*w.ops[i].in_app_ns) / sum);
  return s;
}

size_t window_hottest_kernel(const format::Window& w) {
  std::optional<size_t> best;
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const auto& op = w.ops[i];
    if (op.kind != format::WindowOp::Kind::Kernel) continue;
    if (!best) best = i;
    if (op.in_app_ns && (!w.ops[*best].in_app_ns || *op.in_app_ns > *w.ops[*best].in_app_ns)) best = i;
  }
  return best.value_or(0);
}

WindowGenerated generate_window_reproducer(const WindowRequest& q, const format::Capture& capture,
                                           const format::Window& w) {
  WindowGenerated g;
  g.makefile = q.out / format::out::kMakefile;
  g.readme = q.out / format::out::kReadme;
  const fs::path kerncap = q.kerncap.empty() ? fs::path("kerncap") : q.kerncap;
  // Both texts first: a capture that cannot be written faithfully leaves the old files.
  const std::string makefile = window_makefile(capture, w, kerncap);
  const std::string readme = window_readme(capture, w, kerncap);
  files::replace_file(g.makefile, makefile);
  files::replace_file(g.readme, readme);
  std::error_code ec;
  if (fs::exists(q.out / format::out::kCompileJson, ec) || fs::exists(q.out / format::out::kKernelVariantCu, ec))
    g.notes.push_back("OUT also holds a one-launch reproducer's files (compile.json, kernel_variant.cu): the Makefile "
                      "and README.md now describe the window");
  return g;
}

WindowGenerated generate_window_reproducer(const WindowRequest& q) {
  const format::Capture capture = format::open_capture(q.out / format::kCaptureDirName);
  if (!format::is_window_capture(capture.dir))
    input_error(fmt::format("{} is a one-launch capture, not a window (no {}): its reproducer is written by "
                            "`kerncap extract`",
                            capture.dir.string(), format::kWindowFile));
  const format::Window w = format::read_window(capture.dir);
  return generate_window_reproducer(q, capture, w);
}

}  // namespace kerncap::reproducer
