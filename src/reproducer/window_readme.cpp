// The window reproducer's README.md (templates/window_README.md.in): the window's operations in
// order with their kernels, shapes, in-app times and shares, the kernels and their images, the
// regions the window changed, and the commands. Every name from the capture is escaped for
// Markdown (md_code, md_text: one line, '|' cannot end a table cell); the rest is numbers.
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/hex.hpp"
#include "names/shorten.hpp"
#include "reproducer/render.hpp"
#include "reproducer/templates_embedded.hpp"
#include "reproducer/window_reproducer.hpp"

namespace kerncap::reproducer {
namespace {

constexpr size_t kWindowReadmeRegions = 64;   // rows of the changed-regions table
constexpr size_t kWindowReadmeExamples = 3;   // foreign operations named
constexpr size_t kWindowReadmeGlobals = 8;    // uncaptured globals named per kernel

std::string window_readme_ms(uint64_t ns) { return fmt::format("{:.4f}", static_cast<double>(ns) / 1e6); }

std::string window_readme_ms_or(std::optional<uint64_t> ns, const char* none) {
  return ns ? window_readme_ms(*ns) + " ms" : std::string(none);
}

std::string window_readme_ops(const format::Window& w, const WindowShares& s) {
  std::string rows;
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const auto& op = w.ops[i];
    // Kernel names are the application's (untrusted); the other names and every shape are
    // kerncap's own text made of numbers.
    const std::string name = (op.kind == format::WindowOp::Kind::Kernel ? md_code(names::shorten(window_op_name(op), 80))
                                                                         : window_op_name(op)) +
                             window_op_stream(op);
    const std::string kind = op.kind == format::WindowOp::Kind::Kernel      ? "kernel"
                             : op.kind == format::WindowOp::Kind::Memset    ? "memset"
                             : op.kind == format::WindowOp::Kind::CopyD2D ||
                                     op.kind == format::WindowOp::Kind::CopyH2D
                                 ? "copy"
                                 : to_string(op.kind);
    rows += fmt::format("| {} | {} | {} | {} | {} | {} |\n", i, kind, name, window_op_shape(op),
                        op.in_app_ns ? window_readme_ms(*op.in_app_ns) : "-",
                        s.share[i] ? fmt::format("{:.1f}%", 100.0 * *s.share[i]) : "-");
  }
  if (s.timed_ns) rows += fmt::format("| | | **total** (timed operations) | | {} | 100.0% |\n", window_readme_ms(s.timed_ns));
  if (!rows.empty()) rows.pop_back();
  return rows;
}

std::string window_readme_shares_text(const format::Window& w, const WindowShares& s) {
  if (s.kernels_timed == 0)
    return "No in-app times: CUPTI gave no kernel records for the window's kernels, so there is nothing to compare "
           "the replay's times with.\n";
  std::string note;
  if (s.kernels_timed < s.kernels)
    note = fmt::format("Only {} of the {} kernel launches have an in-app time: the shares are of the timed "
                       "operations' sum ({} ms), and there is no window time.\n",
                       s.kernels_timed, s.kernels, window_readme_ms(s.timed_ns));
  else
    note = fmt::format("share: the operation's part of the kernels' in-app time ({} ms, the column's sum; "
                       "`kerncap window info` shows the same).",
                       window_readme_ms(s.timed_ns));
  if (w.in_app_window_ns && *w.in_app_window_ns && s.kernels_timed == s.kernels)
    note += fmt::format(" In the application the window took {} ms from its first operation's start to its last "
                        "one's end: the kernels ran {:.1f}% of it, the rest is the host's time between launches "
                        "(kerncap's recording of each launch among it, so on a launch-bound window it is an "
                        "overestimate).\n",
                        window_readme_ms(*w.in_app_window_ns),
                        100.0 * static_cast<double>(s.timed_ns) / static_cast<double>(*w.in_app_window_ns));
  else if (s.kernels_timed == s.kernels)
    note += "\n";
  return note;
}

// One paragraph, without its last newline (the template separates the sections).
std::string window_readme_shares_note(const format::Window& w, const WindowShares& s) {
  std::string note = window_readme_shares_text(w, s);
  while (!note.empty() && note.back() == '\n') note.pop_back();
  return note;
}

// Each a paragraph followed by a blank line; empty when there is nothing to warn about.
std::string window_readme_warnings(const format::Window& w) {
  std::string s;
  if (w.foreign_ops) {
    std::vector<std::string> examples;
    for (size_t i = 0; i < w.foreign_examples.size() && i < kWindowReadmeExamples; ++i)
      examples.push_back(md_code(w.foreign_examples[i]));
    s += fmt::format("> **Warning:** {} operation(s) ran in the application during the window but are not part of "
                     "it{}: what they wrote is in AFTER, but no replay makes those writes, so `make validate` FAILs on "
                     "the regions they wrote unless `LIVE_OUT` leaves them out.\n\n",
                     w.foreign_ops, examples.empty() ? "" : fmt::format(" (e.g. {})", fmt::join(examples, "; ")));
  }
  size_t uncaptured = 0;
  for (const auto& op : w.ops) uncaptured += !op.uncaptured_globals.empty();
  if (uncaptured)
    s += fmt::format("> **Note:** {} launch(es) use module globals that are not in the capture (images other than "
                     "the first launch's): they start at their load-time values in a replay (Kernels below).\n\n",
                     uncaptured);
  return s;
}

std::string window_readme_kernels(const format::Window& w) {
  struct Group {
    std::vector<size_t> ops;
    const format::WindowOp* first = nullptr;
    std::set<std::string> globals;
  };
  std::map<std::pair<std::string, uint64_t>, Group> groups;
  std::vector<std::pair<std::string, uint64_t>> order;
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const auto& op = w.ops[i];
    if (op.kind != format::WindowOp::Kind::Kernel) continue;
    const auto key = std::make_pair(op.mangled, op.image_hash);
    Group& g = groups[key];
    if (!g.first) {
      g.first = &op;
      order.push_back(key);
    }
    g.ops.push_back(i);
    g.globals.insert(op.uncaptured_globals.begin(), op.uncaptured_globals.end());
  }
  std::string s;
  for (const auto& key : order) {
    const Group& g = groups.at(key);
    const format::WindowOp& op = *g.first;
    s += fmt::format("- op{} {}: {}\n  mangled {}, image {} ({})\n", g.ops.size() > 1 ? "s" : "", fmt::join(g.ops, ", "),
                     md_code(window_op_name(op)), md_code(op.mangled),
                     md_code("capture/" + format::window_image_file(op.image_hash, op.image_kind)), op.image_kind);
    if (!g.globals.empty()) {
      std::vector<std::string> names;
      for (const auto& n : g.globals) {
        if (names.size() == kWindowReadmeGlobals) break;
        names.push_back(md_code(n));
      }
      s += fmt::format("  module globals not in the capture (load-time values in a replay): {}{}\n",
                       fmt::join(names, ", "),
                       g.globals.size() > names.size() ? fmt::format(" and {} more", g.globals.size() - names.size())
                                                       : std::string());
    }
  }
  if (!s.empty()) s.pop_back();
  return s;
}

// The regions with bytes the window changed, in id order: id -> bytes changed.
std::map<uint32_t, uint64_t> window_readme_changed(const format::Manifest& m) {
  std::map<uint32_t, uint64_t> changed;
  for (const auto& run : m.after) changed[run.region] += run.size;
  return changed;
}

std::string window_readme_regions(const format::Manifest& m, const std::map<uint32_t, uint64_t>& changed) {
  if (changed.empty()) return "None: the window changed no byte of device memory the capture tracks.";
  std::string s = "| region | address | size | changed |\n| ---: | --- | ---: | ---: |\n";
  size_t rows = 0;
  for (const auto& [id, bytes] : changed) {
    if (rows++ == kWindowReadmeRegions) break;
    const format::Region* r = m.find_region(id);
    std::string where = r ? hex_addr(r->base) : std::string("?");
    if (r && !r->global.empty()) where += " (global " + md_code(r->global) + ")";
    s += fmt::format("| {} | {} | {} | {} |\n", id, where, r ? human_bytes(r->size) : std::string("?"), human_bytes(bytes));
  }
  if (changed.size() > kWindowReadmeRegions)
    s += fmt::format("\n… and {} more.\n", changed.size() - kWindowReadmeRegions);
  s.pop_back();
  return s;
}

std::string window_readme_live_out_example(const std::map<uint32_t, uint64_t>& changed) {
  std::vector<uint32_t> ids;
  for (const auto& [id, bytes] : changed) {
    if (ids.size() == 2) break;
    ids.push_back(id);
  }
  return ids.empty() ? std::string("0") : fmt::format("{}", fmt::join(ids, ","));
}

}  // namespace

std::string window_readme(const format::Capture& capture, const format::Window& w, const fs::path& kerncap) {
  const format::Manifest& m = capture.manifest;
  const WindowShares shares = window_shares(w);
  const auto changed = window_readme_changed(m);
  const size_t hottest = window_hottest_kernel(w);
  return render(templates::k_window_README_md,
                {{"WINDOW", md_code(format::window_title(w))},
                 {"SPAN", w.graph ? fmt::format("the CUDA graph launch #{} (from 0) of {}: its {} nodes' kernels, memsets and "
                                                "copies in a topological order, run on one stream",
                                                w.graph->launch,
                                                w.from.empty() ? std::string("any graph")
                                                               : "the graphs holding " + md_code(w.from),
                                                w.graph->nodes)
                 : w.range ? fmt::format("the NVTX range {} (push #{} from 0): its stream's operations from the range's "
                                         "first kernel launch to its pop",
                                         md_code(w.from), w.from_dispatch)
                                  : fmt::format("from {} (match #{}) through {} (match #{} on the same stream, counted "
                                                "from the first launch)",
                                                md_code(w.from), w.from_dispatch, md_code(w.to), w.to_dispatch)},
                 {"OPS", std::to_string(w.ops.size())},
                 {"KERNELS", std::to_string(w.kernels())},
                 {"VERSION", KERNCAP_VERSION},
                 {"COMMAND", m.command.empty() ? "(unknown)" : one_line(m.command)},
                 {"REGEX", w.regex ? " (regular expressions)" : ""},
                 {"LAUNCH_INDEX", std::to_string(m.launch_index)},
                 {"STREAM", hex_addr(w.stream)},
                 {"DEVICE", md_text(m.device_name)},
                 {"CC", fmt::format("{}{}", m.cc_major, m.cc_minor)},
                 {"REGIONS", std::to_string(m.regions.size())},
                 {"BEFORE", human_bytes(m.before_bytes)},
                 {"AFTER", human_bytes(m.after_bytes)},
                 {"IN_APP_WINDOW", window_readme_ms_or(w.in_app_window_ns, "unknown")},
                 {"IN_APP_KERNELS", window_readme_ms_or(w.in_app_kernels_ns, "unknown")},
                 {"OPS_TABLE", window_readme_ops(w, shares)},
                 {"SHARES_NOTE", window_readme_shares_note(w, shares)},
                 {"WARNINGS", window_readme_warnings(w)},
                 {"SWAP_EXAMPLE", fmt::format("{}=variant.cubin", hottest)},
                 {"HOTTEST", std::to_string(hottest)},
                 {"LIVE_OUT_EXAMPLE", window_readme_live_out_example(changed)},
                 {"KERNCAP", md_code(kerncap.string())},
                 {"KERNELS_LIST", window_readme_kernels(w)},
                 {"REGIONS_LIST", window_readme_regions(m, changed)}});
}

}  // namespace kerncap::reproducer
