#include "reproducer/generator.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/private_files.hpp"
#include "cubin/cubin.hpp"
#include "names/shorten.hpp"
#include "reproducer/render.hpp"
#include "reproducer/templates_embedded.hpp"
#include "source/args.hpp"
#include "source/messages.hpp"

namespace kerncap::reproducer {
namespace {

namespace tpl = templates;

// Through NAME.tmp created exclusively, private (common/private_files.hpp).
void replace_text(const fs::path& p, const std::string& text) { files::replace_file(p, text); }

std::string dims(const std::array<uint32_t, 3>& d) { return fmt::format("({}, {}, {})", d[0], d[1], d[2]); }

std::string recompile_rules(const Generated& g, const source::Result& f) {
  if (!g.recompile_available) {
    std::string text = "kerncap: recompile is not available: " + g.unavailable_reason;
    if (!f.detail.empty()) text += "\n" + f.detail;
    text += "\n(see README.md)";
    return render(tpl::k_recompile_unavailable_mk,
                  {{"STATUS", make_comment(source::to_string(f.status))}, {"ECHOES", make_echo_lines(text)}});
  }
  const CompileSpec& s = *g.spec;
  const bool instance = g.unit == kInstanceSource;
  const std::string kernel = names::shorten(f.name.demangled.empty() ? f.name.mangled : f.name.demangled, 80);
  const std::string comment =
      instance ? fmt::format("make recompile compiles kernel_instance.cu: only {}.", kernel)
               : fmt::format("make recompile compiles kernel_variant.cu, the whole unit: {}.", g.whole_unit_reason);
  const std::string whole_note =
      instance ? "kerncap: compiling kernel_variant.cu, the whole unit (WHOLE_UNIT is set)"
               : "kerncap: compiling kernel_variant.cu, the whole unit: " + g.whole_unit_reason;
  return render(tpl::k_recompile_mk,
                {{"COMPILE_DB", make_comment(f.compile_db.string())},
                 {"ARCH", make_comment(s.arch)},
                 {"UNIT_COMMENT", make_comment(comment)},
                 {"COMPILER", make_word(s.compiler, true)},
                 {"FLAGS", make_words(s.flags, true)},
                 {"DEFINES", make_words(s.defines, true)},
                 {"INSTANCE_UNIT", instance ? kInstanceSource : ""},
                 {"INSTANCE_NOTE", make_word(one_line("kerncap: compiling kernel_instance.cu, only " + kernel +
                                                      " (WHOLE_UNIT=1 for the whole unit)"),
                                             true)},
                 {"INSTANCE_FAILED",
                  make_word("kerncap: kernel_instance.cu did not compile; if the error is not in your edit, the "
                            "kernel needs more of its unit than kernel_instance.cu compiles: make -B recompile WHOLE_UNIT=1",
                            true)},
                 {"WHOLE_NOTE", make_word(one_line(whole_note), true)}});
}

std::string cuda_bin(const Generated& g) {
  if (g.spec && fs::path(g.spec->compiler).is_absolute()) return fs::path(g.spec->compiler).parent_path().string();
  return "/usr/local/cuda/bin";
}

std::string source_section(const Generated& g, const source::Result& f) {
  std::string s = fmt::format("Finder verdict: **{}** — {}\n", source::to_string(f.status), f.summary);
  if (!f.detail.empty()) s += "\n```\n" + f.detail + "\n```\n";
  if (f.source_found()) {
    s += fmt::format("\n- definition: `{}:{}` (edit the copy: `{}`, line {})\n", f.definition.string(), f.line,
                     g.mirror->edit_file, g.mirror->edit_line);
    s += fmt::format("- translation unit: `{}` → `kernel_variant.cu`\n", f.tu.string());
    if (f.command) s += fmt::format("- compile command from `{}`\n", f.compile_db.string());
    if (g.spec) s += fmt::format("- recompiled for `{}` with: `{}`\n", g.arch, fmt::join(g.spec->argv(), " "));
    if (g.unit == kInstanceSource && g.instance->includes_unit())
      s += "- `make recompile` compiles `kernel_instance.cu`: `kernel_variant.cu` up to the captured kernel's "
           "definition (what precedes it too), without the host code and other kernels after it; "
           "`make -B recompile WHOLE_UNIT=1` compiles the whole unit\n";
    else if (g.unit == kInstanceSource)
      s += fmt::format("- `make recompile` compiles `kernel_instance.cu`: only this instantiation (`{}`), none of "
                       "the unit's other kernels; `make -B recompile WHOLE_UNIT=1` compiles the whole unit\n",
                       one_line(g.instance->instantiation));
    else if (g.spec)
      s += fmt::format("- `make recompile` compiles `kernel_variant.cu`, the whole unit: {}\n", md_text(g.whole_unit_reason));
  }
  if (!f.how.empty()) {
    s += "\nHow it was found:\n";
    for (const auto& h : f.how) s += "- " + h + "\n";
  }
  std::vector<std::string> notes = f.notes;
  notes.insert(notes.end(), g.notes.begin(), g.notes.end());
  if (!notes.empty()) {
    s += "\nNotes:\n";
    for (const auto& n : notes) s += "- " + n + "\n";
  }
  if (f.status == source::Status::Triton)
    s += "\nFor Triton kernels, edit `kernel_variant.py` and run `python3 reproducer.py` when kerncap wrote them "
         "(docs/triton.md); `kerncap validate .` then uses its `candidate.cubin`.\n";
  if (g.mirror && g.mirror->kept_existing)
    s += "\nThe existing `kernel_variant.cu` and `src/` were kept (your edits); delete them and extract again "
         "with `--force` to regenerate.\n";
  return s;
}

std::string readme(const Generated& g, const source::Result& f, const format::Manifest& m, const fs::path& kerncap) {
  std::string files;
  if (g.mirror) {
    files += fmt::format("\n- `kernel_variant.cu` the translation unit (copy of `{}`)", f.tu.string());
    if (g.mirror->files.size() > 1)
      files += fmt::format("\n- `src/` {} mirrored local include(s) of the unit", g.mirror->files.size() - 1);
  }
  if (g.unit == kInstanceSource)
    files += "\n- `kernel_instance.cu` the unit `make recompile` compiles: the captured kernel without the rest of its unit";
  if (g.recompile_available) files += "\n- `optimized.cubin` the variant, after `make recompile`";
  std::string cluster;
  if (m.cluster[0]) cluster = fmt::format(", cluster {}", dims(m.cluster));
  const std::string edit_where =
      g.mirror ? fmt::format("`{}` (the kernel is at line {})", g.mirror->edit_file, g.mirror->edit_line)
               : "the kernel (no source was found: see Source)";
  return render(tpl::k_README_md,
                {{"KERNEL_SHORT", md_code(names::shorten(m.demangled_name, 80))},
                 {"KERNEL", md_code(m.demangled_name)},
                 {"VERSION", KERNCAP_VERSION},
                 {"COMMAND", m.command.empty() ? "(unknown)" : one_line(m.command)},
                 {"MANGLED", md_code(m.mangled_name)},
                 {"LAUNCH_INDEX", std::to_string(m.launch_index)},
                 {"DISPATCH", std::to_string(m.dispatch)},
                 {"LAUNCH_API", md_code(m.launch_api)},
                 {"GRID", dims(m.grid)},
                 {"BLOCK", dims(m.block)},
                 {"SHARED", std::to_string(m.shared_mem_bytes)},
                 {"CLUSTER", cluster},
                 {"DEVICE", md_text(m.device_name)},
                 {"CC", fmt::format("{}{}", m.cc_major, m.cc_minor)},
                 {"REGIONS", std::to_string(m.regions.size())},
                 {"BEFORE", human_bytes(m.before_bytes)},
                 {"AFTER", human_bytes(m.after_bytes)},
                 {"IMAGE", md_code("capture/" + m.image_file)},
                 {"IMAGE_KIND", md_text(m.image_kind)},
                 {"SOURCE", source_section(g, f)},
                 {"EDIT_WHERE", edit_where},
                 {"KERNCAP", md_code(kerncap.string())},
                 {"FILES", files}});
}

std::string makefile(const Generated& g, const source::Result& f, const format::Manifest& m, const fs::path& kerncap) {
  std::string hint = g.mirror ? fmt::format("Edit {} (line {}), then: make recompile validate-variant run-variant",
                                            g.mirror->edit_file, g.mirror->edit_line)
                              : "No source to edit (see README.md); run, validate, ncu, sanitize and sass work.";
  return render(tpl::k_Makefile, {{"KERNEL", make_comment(m.demangled_name)},
                                  {"VERSION", KERNCAP_VERSION},
                                  {"KERNCAP", make_word(kerncap.string(), true)},
                                  {"CUDA_BIN", make_word(cuda_bin(g), true)},
                                  {"MANGLED", make_word(m.mangled_name, true)},
                                  {"IMAGE", make_word(m.image_file, true)},
                                  {"TITLE", make_word("kerncap reproducer for " + one_line(names::shorten(m.demangled_name, 60)), false)},
                                  {"EDIT_HINT", make_word(one_line(hint), false)},
                                  {"RECOMPILE", recompile_rules(g, f)}});
}

nlohmann::json compile_json(const Generated& g, const source::Result& f, const format::Manifest& m) {
  nlohmann::json j = {{"format", kCompileJsonFormat}, {"format_version", kCompileJsonVersion}};
  j["kernel"] = {{"mangled", m.mangled_name}, {"demangled", m.demangled_name}};
  j["source"] = {{"status", std::string(source::to_string(f.status))},
                 {"summary", f.summary},
                 {"detail", f.detail},
                 {"classification", std::string(names::to_string(f.classification.kind))},
                 {"tree", f.tree.string()},
                 {"definition", f.definition.string()},
                 {"line", f.line},
                 {"translation_unit", f.tu.string()},
                 {"compile_commands", f.compile_db.string()},
                 {"how", f.how},
                 {"notes", f.notes}};
  j["edit"] = g.mirror ? nlohmann::json{{"file", g.mirror->edit_file}, {"line", g.mirror->edit_line}} : nlohmann::json();
  if (f.command)
    j["original"] = {{"directory", f.command->directory.string()},
                     {"file", f.command->file.string()},
                     {"arguments", f.command->argv},
                     {"output", f.command->output ? f.command->output->string() : ""}};
  else
    j["original"] = nullptr;
  nlohmann::json rc = {{"available", g.recompile_available}, {"arch", g.arch}};
  if (g.spec) {
    rc["directory"] = ".";
    rc["arguments"] = g.spec->argv();
    rc["defines"] = g.spec->defines;
    rc["removed"] = g.spec->removed;
    rc["notes"] = g.spec->notes;
    rc["unit"] = g.unit;
    if (g.unit == kInstanceSource)
      rc["instance"] = {{"instantiation", g.instance->instantiation},
                        {"prelude_lines", g.instance->prelude_lines},
                        {"includes_unit", g.instance->includes_unit()}};
    else
      rc["whole_unit_reason"] = g.whole_unit_reason;
  } else {
    rc["reason"] = g.unavailable_reason;
  }
  j["recompile"] = rc;
  nlohmann::json mirror = nlohmann::json::array();
  if (g.mirror)
    for (const auto& mf : g.mirror->files)
      mirror.push_back({{"original", mf.original.string()}, {"copy", mf.copy}, {"rewritten_includes", mf.rewritten_includes}});
  j["mirror"] = mirror;
  return j;
}

// A kernel_variant.cu left by an extract of another kernel (`--force` into the same OUT) is
// moved aside with its mirror and cubin, so the new kernel's files are written and nothing
// the user edited is lost. Returns a note, or "" when nothing was moved.
std::string set_aside_other_kernel(const fs::path& out, const std::string& mangled) {
  if (!fs::exists(out / kVariantSource)) return "";
  try {
    std::ifstream in(out / format::out::kCompileJson);
    if (nlohmann::json::parse(in).at("kernel").at("mangled").get<std::string>() == mangled) return "";
  } catch (const std::exception&) {
    // No readable compile.json: the files cannot be tied to this kernel; set them aside too.
  }
  for (const char* name : {kVariantSource, kInstanceSource, kMirrorDir, kLibraryDir, kVariantCubin}) {
    if (!fs::exists(out / name)) continue;
    files::remove_inside(out, std::string(name) + ".prev");
    fs::rename(out / name, out / (std::string(name) + ".prev"));
  }
  return "moved the previous kernel's kernel_variant.cu, kernel_instance.cu, src/, library/ and optimized.cubin aside "
         "(*.prev)";
}

std::string read_if_present(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return in ? ss.str() : std::string();
}

// Decides what `make recompile` compiles and writes kernel_instance.cu when it can be made.
// An existing one is kept with the user's other edits (kept_existing); a fresh mirror gets a
// fresh one, and a stale one is removed when the instance cannot be made any more.
void plan_unit(Generated& g, const source::Result& f, const fs::path& out) {
  const fs::path path = out / kInstanceSource;
  if (g.mirror->kept_existing && fs::exists(path)) {
    g.unit = kInstanceSource;
    g.instance = InstanceUnit{read_if_present(path), "", 0, ""};
  } else {
    const std::string original = read_if_present(f.tu);
    InstanceUnit u;
    if (original.empty()) {
      u.reason = "the unit " + f.tu.string() + " could not be read again";
    } else if (!f.library_root.empty()) {
      // Its template arguments name the library's internals (agents, policies, tile states):
      // the unit's own call instantiates it exactly.
      u.reason = "the kernel comes from a library header (" + g.mirror->edit_file + "), instantiated by the unit";
    } else {
      const std::string unit_text = rewrite_includes(original, f.tu, true, f.includes, f.tree);
      u = plan_instance(f, unit_text, g.mirror->edit_file);
    }
    if (u.available() && !u.variant_text.empty() && g.mirror->kept_existing) {
      // The cut needs its guard lines in kernel_variant.cu, which holds the user's edits.
      u = InstanceUnit{"", u.instantiation, 0,
                       "the kernel is defined in the unit, and the kept kernel_variant.cu (your edits) has no " +
                           std::string(kInstanceOnly) + " guard after it: delete it and extract again to get one",
                       ""};
    }
    g.instance = u;
    if (u.available()) {
      if (!u.variant_text.empty()) files::replace_file(out / kVariantSource, u.variant_text);
      files::replace_file(path, u.text);
      g.unit = kInstanceSource;
    } else {
      files::remove_inside(out, kInstanceSource);
      g.unit = kVariantSource;
      g.whole_unit_reason = u.reason;
    }
  }
  if (g.unit == kInstanceSource) {
    if (g.instance->instantiation.empty()) {  // kept: the line is the file's last declaration
      std::string why;
      g.instance->instantiation = explicit_instantiation(f.name, why);
    }
    g.spec->source = kInstanceSource;
    g.notes.push_back(std::string("make recompile compiles kernel_instance.cu: ") +
                      (g.instance->includes_unit() ? "the unit up to the captured kernel's definition"
                                                   : "only the captured instantiation") +
                      ", for " + g.arch + " (make -B recompile WHOLE_UNIT=1: the whole unit)");
  } else {
    g.notes.push_back("make recompile compiles kernel_variant.cu, the whole unit: " + g.whole_unit_reason);
  }
}

}  // namespace

std::string variant_arch(const format::Capture& c) {
  const auto& m = c.manifest;
  std::string arch = fmt::format("sm_{}{}", m.cc_major, m.cc_minor);
  // The CC comes from the manifest: computed wide, and only a plausible one is looked up.
  const int64_t sm = int64_t{m.cc_major} * 10 + m.cc_minor;
  if (m.cc_major < 0 || m.cc_minor < 0 || m.cc_minor > 9 || sm > 10000) return arch;
  try {
    const auto bytes = c.read_image();
    const cubin::Image img = cubin::parse_image(bytes, static_cast<int>(sm));
    if (img.arch_specific && img.sm == sm) arch += "a";
  } catch (const Error&) {
    // An image kerncap cannot read still replays; the plain SM is the safe choice.
  }
  return arch;
}

Generated generate_reproducer(const GenerateRequest& q) {
  const format::Capture capture = format::open_capture(q.out / format::kCaptureDirName);
  const format::Manifest& m = capture.manifest;
  const source::Result& f = q.found;
  Generated g;
  g.arch = variant_arch(capture);
  if (auto moved = set_aside_other_kernel(q.out, m.mangled_name); !moved.empty()) g.notes.push_back(moved);
  if (f.source_found()) {
    g.mirror = write_mirror(f, q.out);
    if (g.mirror->kept_existing)
      g.notes.push_back("kept the existing kernel_variant.cu and src/ (your edits); delete them to regenerate");
  }
  if (f.status == source::Status::Found) {
    try {
      g.spec = rewrite_command(*f.command, {f.tree, kMirrorDir, g.arch, q.defines, kVariantSource, kVariantCubin});
      g.recompile_available = true;
      if (!f.library_root.empty()) {
        g.spec->flags.insert(g.spec->flags.begin(), std::string("-I") + kLibraryDir);
        g.notes.push_back(fmt::format("the kernel is defined in the library header {} (not in the source tree): edit "
                                      "its copy {}, found ahead of the library's own (-I{})",
                                      f.definition.string(), g.mirror->edit_file, kLibraryDir));
      }
      g.notes.insert(g.notes.end(), g.spec->notes.begin(), g.spec->notes.end());
      plan_unit(g, f, q.out);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Usage) throw;
      g.unavailable_reason = e.what();
    }
  } else {
    g.unavailable_reason = f.summary;
  }
  for (const auto& d : q.defines) (void)define_flag(d);  // a bad -D is an error even without source
  replace_text(q.out / format::out::kMakefile, makefile(g, f, m, q.kerncap));
  replace_text(q.out / format::out::kReadme, readme(g, f, m, q.kerncap));
  replace_text(q.out / format::out::kCompileJson, compile_json(g, f, m).dump(1) + "\n");
  return g;
}

}  // namespace kerncap::reproducer
