// `kerncap footprint`: measure (once; cached in the capture) which bytes of each captured
// region the launch reads, writes, and reads before writing; and what it touched outside them.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "footprint/footprint.hpp"
#include "format/window.hpp"

namespace kerncap::cli {
namespace {

struct FootprintArgs {
  std::string dir;
  bool json = false;
  bool force = false;
  bool no_timing = false;
  bool quiet = false;
  std::string sanitizer_lib;
  uint64_t max_escapes = 1024;
};

std::string pc_text(const format::Footprint& f, uint64_t pc) {
  if (f.kernel_pc && pc >= f.kernel_pc) return fmt::format("+{:#x}", pc - f.kernel_pc);
  return hex_addr(pc);
}

void print_table(const format::Footprint& f, const format::Capture& cap, bool cached) {
  const auto& m = cap.manifest;
  std::cout << fmt::format("footprint of {} ({} on {})\n", m.demangled_name.empty() ? m.mangled_name : m.demangled_name,
                           cached ? "measured earlier; --force measures again" : fmt::format("measured in {:.1f} s", f.seconds),
                           f.device_name);
  std::cout << fmt::format("  {:>4}  {:<15} {:<18} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "id", "kind", "base", "size",
                           "read", "written", "RBW", "write-only");
  for (const auto& r : f.regions) {
    std::string kind = format::to_string(r.kind);
    if (r.kind == format::MemKind::Global) kind += " " + r.global;
    if (kind.size() > 15) kind = kind.substr(0, 14) + "~";
    std::cout << fmt::format("  {:>4}  {:<15} {:<18} {:>10} {:>10} {:>10} {:>10} {:>10}\n", r.id, kind, hex_addr(r.base),
                             human_bytes(r.size), human_bytes(r.read_bytes()),
                             human_bytes(r.written_bytes()) + (r.probed ? "*" : ""), human_bytes(r.rbw_bytes()),
                             human_bytes(r.write_only_bytes()));
  }
  std::cout << "  RBW: read before written (an input); write-only: written without being read first (an output "
               "strong validation can poison)\n";
  if (std::any_of(f.regions.begin(), f.regions.end(), [](const auto& r) { return r.probed; }))
    std::cout << "  *: found by probing (the region was poisoned twice and replayed): the sanitizer saw no access to it,\n"
                 "     as with TMA bulk copies; its reads are unknown, so --fuzz does not vary it\n";
  if (f.escape_count == 0) {
    std::cout << "  escaped: none (every global access fell inside a captured region)\n";
  } else {
    std::cout << fmt::format("  escaped: {} access(es) outside every captured region (memory the capture lacks):\n",
                             f.escape_count);
    for (size_t i = 0; i < f.escapes.size() && i < 5; ++i) {
      const auto& e = f.escapes[i];
      std::cout << fmt::format("    {} {} B {} at pc {}: {}\n", hex_addr(e.address), e.size,
                               e.atomic ? "atomic" : e.write ? "write" : "read", pc_text(f, e.pc), e.nearest);
    }
    if (f.escape_count > 5) std::cout << fmt::format("    ... {} more (--json lists up to {})\n", f.escape_count - 5, f.escapes.size());
  }
  std::string slowdown = f.plain_ms > 0 ? fmt::format(", plain {:.4f} ms ({:.0f}x slower instrumented)", f.plain_ms,
                                                      f.instrumented_ms / f.plain_ms)
                                        : ", plain launch not timed";
  std::cout << fmt::format("  {} global accesses; instrumented launch {:.3f} ms{}\n", f.accesses, f.instrumented_ms,
                           slowdown);
  std::cout << fmt::format("  files: {}, {}\n", (cap.dir / format::kFootprintJson).string(),
                           (cap.dir / format::kFootprintBin).string());
}

void run_footprint(const FootprintArgs& a, int& exit_code) {
  if (a.quiet) log::set_level(log::Level::Quiet);
  format::refuse_window_capture(a.dir, "kerncap footprint",
                                "Strong validation of a window probes its regions itself: `kerncap window validate " +
                                    a.dir + "`.");
  const format::Capture cap = format::open_capture(a.dir);
  std::optional<format::Footprint> f;
  bool cached = false;
  if (!a.force) {
    f = footprint::load_or_none(cap);
    cached = f.has_value();
  }
  if (!f) {
    footprint::MeasureOptions o;
    o.capture = cap.dir;
    if (!a.sanitizer_lib.empty()) o.sanitizer_library = a.sanitizer_lib;
    o.max_escapes = a.max_escapes;
    o.timing = !a.no_timing;
    o.progress = !a.quiet;
    f = footprint::measure(o);
    format::write_footprint(cap.dir, *f);
  }
  if (a.json) {
    nlohmann::json j = format::summary_json(*f);
    j["cached"] = cached;
    j["files"] = {(cap.dir / format::kFootprintJson).string(), (cap.dir / format::kFootprintBin).string()};
    std::cout << j.dump(2) << std::endl;
  } else {
    print_table(*f, cap, cached);
  }
  exit_code = 0;
}

}  // namespace

void add_footprint(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<FootprintArgs>();
  auto* cmd = app.add_subcommand("footprint", "Measure which bytes the captured launch reads and writes");
  cmd->footer(
      "Replays the launch once with every global load, store and atomic instrumented through the Compute\n"
      "Sanitizer API (libsanitizer-public.so, found beside kerncap, on the library path or in the CUDA\n"
      "toolkit's compute-sanitizer/). Records per captured region the bytes read, written, and read before\n"
      "written, and any access outside every captured region (\"escaped\": memory the capture lacks).\n"
      "Kept in the capture (footprint.json + footprint.bin): later runs print it without measuring.\n"
      "Costs one restore and an instrumented launch (often 100-1000x the kernel's time), plus an\n"
      "uninstrumented launch for the slowdown unless --no-timing. See docs/footprint.md.");
  cmd->add_option("dir", a->dir, "Reproducer directory (OUT) or OUT/capture")->required();
  cmd->add_flag("--json", a->json, "Machine-readable summary (regions, escapes, timings) on stdout");
  cmd->add_flag("--force", a->force, "Measure again even when the capture has a footprint");
  cmd->add_flag("--no-timing", a->no_timing, "Skip the warm-up and the uninstrumented launch (one restore only)");
  cmd->add_option("--sanitizer-lib", a->sanitizer_lib, "Path of libsanitizer-public.so to use");
  cmd->add_option("--max-escapes", a->max_escapes, "Escaped accesses to keep with address and PC (all are counted)")
      ->default_val(1024)
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24));
  cmd->add_flag("-q,--quiet", a->quiet, "No progress lines on stderr");
  add_store_option(cmd);
  cmd->callback([a, &exit_code] { run_footprint(*a, exit_code); });
}

}  // namespace kerncap::cli
