#include "source/finder.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/error.hpp"
#include "source/choose.hpp"
#include "source/library_headers.hpp"
#include "source/messages.hpp"
#include "source/tree_search.hpp"

namespace kerncap::source {

std::string_view to_string(Status s) {
  switch (s) {
    case Status::Found: return "found";
    case Status::NoCompileCommand: return "no-compile-command";
    case Status::NoSourceDir: return "no-source-dir";
    case Status::NotInTree: return "not-in-tree";
    case Status::LibraryKernel: return "library-kernel";
    case Status::RuntimeGenerated: return "runtime-generated";
    case Status::Triton: return "triton";
    case Status::Ambiguous: return "ambiguous";
  }
  return "?";
}

namespace {

bool name_matches(const names::KernelName& k, const Definition& d) {
  return d.name == k.base && (!k.cxx || d.scopes == k.scopes);
}

bool shape_matches(const names::KernelName& k, const Definition& d) {
  if (!k.cxx) return true;
  if (k.is_template != d.is_template) return false;
  if (d.variadic) return k.params.size() + 1 >= static_cast<size_t>(d.param_count);
  return k.params.size() == static_cast<size_t>(d.param_count);
}

// The common directory of the database's files: the tree when only --compile-commands is given.
fs::path common_root(const CompileDb& db) {
  std::optional<fs::path> root;
  for (const auto& e : db.entries) {
    fs::path dir = e.file.parent_path();
    if (!root) { root = dir; continue; }
    fs::path common;
    for (auto a = root->begin(), b = dir.begin(); a != root->end() && b != dir.end() && *a == *b; ++a, ++b)
      common /= *a;
    root = common;
  }
  return root.value_or(fs::path("/"));
}

bool has_entry_inside(const CompileDb& db, const fs::path& tree) {
  return std::any_of(db.entries.begin(), db.entries.end(), [&](const CompileCommand& e) { return inside(e.file, tree); });
}

std::optional<CompileDb> discover_db(const fs::path& tree, Result& r) {
  for (const auto& p : find_compile_dbs(tree)) {
    try {
      CompileDb db = load_compile_db(p);
      if (!has_entry_inside(db, tree)) continue;
      r.how.push_back(fmt::format("found {} (no --compile-commands given)", p.string()));
      return db;
    } catch (const Error& e) {
      r.notes.push_back(fmt::format("ignored {}: {}", p.string(), e.what()));
    }
  }
  return std::nullopt;
}

// A C++ kernel the tree does not define: a header library its units include may (Thrust's and
// CUB's own kernels, CUTLASS's cutlass::Kernel2<...> from a checkout given with -I). The first
// definition per file is kept (#if branches of one definition: device and host passes).
bool found_in_library(const Request& q, const TreeScan& tree_scan, const CompileDb& db, SourceCache& cache,
                      Result& r) {
  if (std::none_of(db.entries.begin(), db.entries.end(),
                   [&](const CompileCommand& e) { return inside(e.file, r.tree) && compiles_cuda(e); }))
    return false;
  const std::vector<fs::path> dirs = library_include_dirs(db, r.tree);
  for (const auto& dir : dirs) {
    const TreeScan lib = scan_tree(dir, r.name.base, cache);
    std::vector<const Located*> defs;
    std::vector<fs::path> files;
    for (const auto& l : lib.named)
      if (l.def.definition && l.def.name == r.name.base && library_scopes_match(r.name.scopes, l.def.scopes) &&
          shape_matches(r.name, l.def) && std::find(files.begin(), files.end(), l.file) == files.end()) {
        files.push_back(l.file);
        defs.push_back(&l);
      }
    if (defs.empty()) continue;
    r.library_root = dir;
    r.how.push_back(fmt::format("not defined in the tree: {} definition(s) of {} in the library headers under {} "
                                "({} files searched)",
                                defs.size(), r.name.qualified(), dir.string(), lib.files_listed));
    choose_translation_unit(q, tree_scan, defs, &db, cache, r);
    if (!r.source_found()) r.library_root.clear();
    return true;
  }
  if (!dirs.empty())
    r.notes.push_back(fmt::format("not in the library headers either: {} include director{} outside the tree "
                                  "searched (the build's -I/-isystem, then the toolkit's)",
                                  dirs.size(), dirs.size() == 1 ? "y" : "ies"));
  return false;
}

void not_found(const Request& q, const TreeScan& scan, Result& r) {
  const bool runtime_strings = std::any_of(scan.strings.begin(), scan.strings.end(), [](auto& h) { return h.with_global; }) ||
                               (!scan.strings.empty() && scan.mentions_nvrtc);
  if (q.image_kind == "ptx" || runtime_strings) return classify_runtime(q, scan, r);
  if (r.classification.kind == names::Kind::Triton && q.language == Language::Auto) return classify_triton(r, false);
  classify_not_in_tree(scan, r);
}

}  // namespace

Result find_source(const Request& q) {
  Result r;
  r.name = names::parse_kernel_name(q.mangled, q.demangled);
  r.classification = names::classify(q.mangled, r.name.demangled);
  std::error_code ec;
  if (q.source_dir && !fs::is_directory(*q.source_dir, ec))
    usage_error(fmt::format("--source-dir {}: no such directory", q.source_dir->string()));
  if (q.compile_commands && !fs::is_regular_file(*q.compile_commands, ec))
    usage_error(fmt::format("--compile-commands {}: no such file", q.compile_commands->string()));
  if (q.language == Language::Triton) {
    classify_triton(r, true);
    return r;
  }
  if (q.language == Language::Auto && !r.classification.source_expected) {
    classify_library(r);
    return r;
  }
  std::optional<CompileDb> db;
  if (q.compile_commands) {
    db = load_compile_db(*q.compile_commands);
    r.how.push_back(fmt::format("compile commands from {}", db->path.string()));
  }
  if (q.source_dir) r.tree = canonical_or_self(*q.source_dir);
  else if (db) r.tree = common_root(*db);
  else if (r.classification.kind == names::Kind::Triton) {
    classify_triton(r, false);
    return r;
  } else {
    classify_no_source_dir(r);
    return r;
  }
  if (!db) db = discover_db(r.tree, r);

  SourceCache cache;
  const TreeScan scan = scan_tree(r.tree, r.name.base, cache);
  std::vector<const Located*> defs, shaped;
  for (const auto& l : scan.named)
    if (l.def.definition && name_matches(r.name, l.def)) defs.push_back(&l);
  for (const auto* l : defs)
    if (shape_matches(r.name, l->def)) shaped.push_back(l);
  if (!shaped.empty()) defs = shaped;
  else if (!defs.empty())
    r.notes.push_back(fmt::format("no definition of {} has {} parameter(s){}; matched by name only",
                                  r.name.qualified(), r.name.params.size(), r.name.is_template ? " and is a template" : ""));
  if (!r.name.cxx) {  // an unmangled name: prefer extern "C" definitions
    std::vector<const Located*> c;
    std::copy_if(defs.begin(), defs.end(), std::back_inserter(c), [](auto* l) { return l->def.extern_c; });
    if (!c.empty()) defs = c;
  }
  // Not for a PTX image: the driver compiled it at run time (NVRTC), not the build.
  if (defs.empty() && db && r.name.cxx && q.image_kind != "ptx" && found_in_library(q, scan, *db, cache, r)) return r;
  if (defs.empty()) {
    not_found(q, scan, r);
    return r;
  }
  r.how.push_back(fmt::format("{} definition(s) of {} in {} ({} of {} files mention the name)", defs.size(),
                              r.name.qualified(), r.tree.string(), scan.files_parsed, scan.files_listed));
  choose_translation_unit(q, scan, defs, db ? &*db : nullptr, cache, r);
  if (q.image_kind == "ptx" && r.source_found())
    r.notes.push_back("the captured image is PTX that the driver compiled at run time; the variant is compiled ahead "
                      "of time to a cubin, so code generation may differ from the captured launch");
  return r;
}

}  // namespace kerncap::source
