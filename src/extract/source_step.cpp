#include "extract/source_step.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "cubin/cubin.hpp"
#include "format/capture_dir.hpp"
#include "source/compile_db.hpp"

namespace kerncap::extract {

void check_source_options(const SourceOptions& o) {
  std::error_code ec;
  if (o.source_dir && !fs::is_directory(*o.source_dir, ec))
    usage_error(fmt::format("--source-dir {}: no such directory", o.source_dir->string()));
  if (o.compile_commands) {
    if (!fs::is_regular_file(*o.compile_commands, ec))
      usage_error(fmt::format("--compile-commands {}: no such file", o.compile_commands->string()));
    (void)source::load_compile_db(*o.compile_commands);  // malformed: fail before the application runs
  }
  for (const auto& d : o.defines) (void)reproducer::define_flag(d);
}

source::Language language_from_string(const std::string& s) {
  if (s == "auto") return source::Language::Auto;
  if (s == "cuda") return source::Language::Cuda;
  if (s == "triton") return source::Language::Triton;
  usage_error(fmt::format("--language {}: expected auto, cuda or triton", s));
}

Outcome make_reproducer(const fs::path& out, const SourceOptions& o, const fs::path& kerncap) {
  const format::Capture c = format::open_capture(out / format::out::kCapture);
  source::Request q;
  q.mangled = c.manifest.mangled_name;
  q.demangled = c.manifest.demangled_name;
  q.source_dir = o.source_dir;
  q.compile_commands = o.compile_commands;
  q.image_kind = c.manifest.image_kind;
  q.language = o.language;
  try {
    q.image_kernels = cubin::kernel_names(c.read_image());
  } catch (const Error&) {
    // Unreadable image: the finder decides without the image's other kernels.
  }
  Outcome r;
  r.found = source::find_source(q);
  try {
    r.generated = reproducer::generate_reproducer({out, r.found, o.defines, kerncap});
  } catch (const Error& e) {
    fail(e.kind(), fmt::format("the capture in {} is complete, but writing the reproducer next to it failed: {}",
                               (out / format::out::kCapture).string(), e.what()));
  }
  return r;
}

std::vector<std::string> describe(const Outcome& r, const fs::path& out) {
  const auto& f = r.found;
  const auto& g = r.generated;
  std::vector<std::string> lines;
  lines.push_back(fmt::format("  source: {} ({}): {}", source::to_string(f.status),
                              names::to_string(f.classification.kind), f.summary));
  if (!f.source_found())
    for (size_t start = 0; start < f.detail.size();) {
      size_t nl = f.detail.find('\n', start);
      if (nl == std::string::npos) nl = f.detail.size();
      lines.push_back("    " + f.detail.substr(start, nl - start));
      start = nl + 1;
    }
  for (const auto& h : f.how) lines.push_back("    how: " + h);
  for (const auto& n : f.notes) lines.push_back("    note: " + n);
  for (const auto& n : g.notes) lines.push_back("    note: " + n);
  if (g.recompile_available) {
    lines.push_back(fmt::format("  reproducer: {} (make help); edit {} (line {}), then make recompile validate-variant",
                                out.string(), g.mirror->edit_file, g.mirror->edit_line));
  } else {
    lines.push_back(fmt::format("  reproducer: {} (make help): run, validate, ncu, sanitize and sass; recompile "
                                "is not available ({})",
                                out.string(), source::to_string(f.status)));
  }
  return lines;
}

nlohmann::json to_json(const Outcome& r, const fs::path& out) {
  const auto& f = r.found;
  const auto& g = r.generated;
  nlohmann::json j = {{"status", std::string(source::to_string(f.status))},
                      {"classification", std::string(names::to_string(f.classification.kind))},
                      {"summary", f.summary},
                      {"detail", f.detail},
                      {"how", f.how},
                      {"notes", f.notes}};
  if (f.source_found()) {
    j["definition"] = f.definition.string();
    j["line"] = f.line;
    j["translation_unit"] = f.tu.string();
  }
  nlohmann::json rep = {{"dir", out.string()}, {"recompile_available", g.recompile_available}, {"arch", g.arch}};
  if (g.mirror) rep["edit_file"] = (out / g.mirror->edit_file).string();
  if (!g.recompile_available) rep["reason"] = g.unavailable_reason;
  if (!g.unit.empty()) rep["recompile_unit"] = g.unit;
  if (!g.whole_unit_reason.empty()) rep["whole_unit_reason"] = g.whole_unit_reason;
  return {{"source", j}, {"reproducer", rep}};
}

}  // namespace kerncap::extract
