// The window reproducer's Makefile (templates/window_Makefile.in). Values from the capture reach
// it in two forms only: Makefile comments (make_comment: one line, no trailing backslash) and
// the text of `@echo` lines (make_echo_lines: shell-quoted, '$' doubled). The commands are the
// template's alone: no word of them comes from the capture (the kerncap path is this binary's,
// quoted as a word).
#include <fmt/format.h>

#include "names/shorten.hpp"
#include "reproducer/render.hpp"
#include "reproducer/templates_embedded.hpp"
#include "reproducer/window_reproducer.hpp"

namespace kerncap::reproducer {
namespace {

// The help lists at most this many operations (the README lists them all).
constexpr size_t kWindowMakeHelpOps = 40;
constexpr size_t kWindowMakeCommentOps = 400;

std::string window_make_title(const format::Window& w) {
  return format::window_title(w);
}

std::string window_make_op_line(const format::Window& w, size_t i) {
  const auto& op = w.ops[i];
  std::string name = window_op_name(op);
  if (op.kind == format::WindowOp::Kind::Kernel) name = names::shorten(name, 70);
  name += window_op_stream(op);
  return fmt::format("op {:>3}  {:<8}  {}  {}", i, to_string(op.kind), name, window_op_shape(op));
}

}  // namespace

std::string window_makefile(const format::Capture& /*capture*/, const format::Window& w, const fs::path& kerncap) {
  std::string comment;
  for (size_t i = 0; i < w.ops.size() && i < kWindowMakeCommentOps; ++i)
    comment += "#   " + make_comment(window_make_op_line(w, i)) + "\n";
  if (w.ops.size() > kWindowMakeCommentOps)
    comment += fmt::format("#   ... {} more (README.md)\n", w.ops.size() - kWindowMakeCommentOps);
  comment += "#";
  std::string listed;
  for (size_t i = 0; i < w.ops.size() && i < kWindowMakeHelpOps; ++i)
    listed += "  " + one_line(window_make_op_line(w, i)) + "\n";
  if (w.ops.size() > kWindowMakeHelpOps)
    listed += fmt::format("  ... {} more (README.md, make info)\n", w.ops.size() - kWindowMakeHelpOps);
  listed += " ";
  const std::string help = make_echo_lines(listed);
  const std::string title = fmt::format("kerncap window reproducer: {} operations ({} kernels), {}", w.ops.size(),
                                        w.kernels(), window_make_title(w));
  return render(templates::k_window_Makefile,
                {{"WINDOW", make_comment(window_make_title(w))},
                 {"VERSION", KERNCAP_VERSION},
                 {"OPS_COMMENT", comment},
                 {"KERNCAP", make_word(kerncap.string(), true)},
                 {"ITERATIONS", "20"},
                 {"WARMUP", "3"},
                 {"SWAP_EXAMPLE", fmt::format("{}=variant.cubin", window_hottest_kernel(w))},
                 {"TITLE", make_word(one_line(title), false)},
                 {"HELP_OPS", help}});
}

}  // namespace kerncap::reproducer
