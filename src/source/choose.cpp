#include "source/choose.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "source/messages.hpp"
#include "source/object_symbols.hpp"

namespace kerncap::source {
namespace {

struct Pair {
  const Located* loc = nullptr;
  fs::path tu;
  const CompileCommand* cmd = nullptr;
  const IncludeClosure* closure = nullptr;
  SearchPaths sp;
};

bool cuda_extension(const fs::path& p) { return p.extension() == ".cu"; }
bool header_like(const fs::path& p) {
  static const std::set<std::string> src = {".cu", ".cpp", ".cc", ".cxx", ".c++", ".c"};
  return !src.count(p.extension().string());
}

// Search paths without a compile command: the tree root and its include/ directory.
SearchPaths guessed_paths(const fs::path& tree) {
  SearchPaths sp;
  sp.angle.push_back(tree);
  std::error_code ec;
  if (fs::is_directory(tree / "include", ec)) sp.angle.push_back(tree / "include");
  return sp;
}

bool includes_hip(const IncludeClosure& c) {
  return std::any_of(c.edges.begin(), c.edges.end(),
                     [](const IncludeEdge& e) { return e.directive.spelled.starts_with("hip/"); });
}

class Chooser {
 public:
  Chooser(const Request& q, const TreeScan& scan, const CompileDb* db, SourceCache& cache, Result& r)
      : q_(q), scan_(scan), db_(db), cache_(cache), r_(r) {}

  void run(const std::vector<const Located*>& defs) {
    std::vector<Pair> pairs;
    for (const auto* d : defs) {
      auto p = pairs_for(d);
      pairs.insert(pairs.end(), p.begin(), p.end());
    }
    for (const auto& p : pairs) r_.candidates.push_back({p.loc->file, p.loc->def.line, p.tu, ""});
    if (pairs.size() > 1) narrow(pairs);
    if (!distinct_definitions(pairs)) return ambiguous(pairs);
    if (pairs.size() > 1)
      r_.how.push_back(fmt::format("{} translation units compile this definition and nothing preferred one: using {}",
                                   pairs.size(), display(pairs.front().tu, r_.tree)));
    finish(pairs.front());
  }

 private:
  // The tree's files, listed once (only needed without a compile command).
  const std::vector<fs::path>& tree_files() {
    if (!tree_files_) tree_files_ = list_source_files(r_.tree);
    return *tree_files_;
  }

  const IncludeClosure& closure(const fs::path& tu, const SearchPaths& sp) {
    auto key = tu.string();
    for (const auto& d : sp.angle) key += "\n" + d.string();
    for (const auto& d : sp.quote) key += "\nq" + d.string();
    for (const auto& d : sp.system) key += "\ns" + d.string();
    for (const auto& d : sp.forced) key += "\nf" + d.string();
    auto it = closures_.find(key);
    if (it == closures_.end()) it = closures_.emplace(key, trace_includes(tu, sp, r_.tree, cache_)).first;
    return it->second;
  }

  std::vector<Pair> pairs_for(const Located* d) {
    std::vector<Pair> out;
    const bool library = !r_.library_root.empty();
    if (db_) {
      for (const auto& e : db_->entries) {
        if (!compiles_cuda(e)) continue;
        SearchPaths sp = search_paths_of(e);
        const IncludeClosure& c = closure(e.file, sp);
        // A library header outside the tree (library_headers.hpp) is not traced: any CUDA unit
        // of the tree may instantiate its kernel; the object files and the image decide.
        if (e.file == d->file || c.contains(d->file) || (library && inside(e.file, r_.tree)))
          out.push_back({d, e.file, &e, &c, sp});
      }
      if (!out.empty()) return out;
    }
    // No compile command for it: the definition's own file when it is a source file, else
    // the tree's .cu files that include it.
    SearchPaths sp = guessed_paths(r_.tree);
    if (!header_like(d->file)) {
      bool included = false;
      for (const auto& f : tree_files()) {
        if (!cuda_extension(f) || f == d->file) continue;
        const IncludeClosure& c = closure(f, sp);
        if (c.contains(d->file)) {
          out.push_back({d, f, nullptr, &c, sp});
          included = true;
        }
      }
      if (!included) out.push_back({d, d->file, nullptr, &closure(d->file, sp), sp});
      return out;
    }
    for (const auto& f : tree_files()) {
      if (!cuda_extension(f)) continue;
      const IncludeClosure& c = closure(f, sp);
      if (c.contains(d->file)) out.push_back({d, f, nullptr, &c, sp});
    }
    if (out.empty()) out.push_back({d, d->file, nullptr, &closure(d->file, sp), sp});
    return out;
  }

  static bool distinct_definitions(const std::vector<Pair>& pairs) {
    for (const auto& p : pairs)
      if (p.loc != pairs.front().loc) return false;
    return true;
  }

  // Keeps the pairs for which `keep` is true, when that leaves some and removes some.
  template <class F>
  bool filter(std::vector<Pair>& pairs, F keep, const std::string& why_kept) {
    std::vector<Pair> kept;
    std::copy_if(pairs.begin(), pairs.end(), std::back_inserter(kept), keep);
    if (kept.empty() || kept.size() == pairs.size()) return false;
    for (const auto& p : pairs)
      if (std::none_of(kept.begin(), kept.end(), [&](const Pair& k) { return k.loc == p.loc && k.tu == p.tu; }))
        mark_rejected(p, "not kept: " + why_kept);
    pairs = std::move(kept);
    r_.how.push_back(why_kept);
    return true;
  }

  void mark_rejected(const Pair& p, const std::string& why) {
    for (auto& c : r_.candidates)
      if (c.file == p.loc->file && c.tu == p.tu && c.line == p.loc->def.line && c.why_not.empty()) c.why_not = why;
  }

  void narrow(std::vector<Pair>& pairs) {
    // 1. The object files the build wrote: exact, when they exist and are current.
    std::map<fs::path, bool> has;
    size_t checked = 0;
    for (const auto& p : pairs)
      if (p.cmd && p.cmd->output && !has.count(*p.cmd->output)) {
        auto names = object_kernel_names(*p.cmd->output);
        if (!names.empty()) ++checked;
        has[*p.cmd->output] = names.count(r_.name.mangled) > 0;
      }
    filter(pairs, [&](const Pair& p) { return p.cmd && p.cmd->output && has[*p.cmd->output]; },
           fmt::format("object file symbols: only the kept unit's object holds {} ({} object file(s) read)",
                       r_.name.mangled, checked));
    if (pairs.size() == 1) return;
    // 2. HIP ports of the same code (HeCBench's foo-cuda/ beside foo-hip/) are not CUDA units.
    filter(pairs, [](const Pair& p) { return !includes_hip(*p.closure); },
           "dropped HIP translation units (they include hip/ headers)");
    if (pairs.size() == 1) return;
    // 3. The captured image holds every kernel of the unit that compiled it.
    if (!q_.image_kernels.empty()) narrow_by_image(pairs);
    if (pairs.size() == 1) return;
    // 4. nvcc tags anonymous namespaces with the compiled file's name.
    if (!r_.name.anon_file_hint.empty())
      filter(pairs,
             [&](const Pair& p) { return names::file_hint_of(p.tu.filename().string()) == r_.name.anon_file_hint; },
             fmt::format("the mangled name's anonymous-namespace tag names the file '{}'", r_.name.anon_file_hint));
    if (pairs.size() == 1) return;
    // 5. A compile command beats none; a .cu unit beats other kinds.
    filter(pairs, [](const Pair& p) { return p.cmd != nullptr; }, "only the kept unit has a compile command");
    filter(pairs, [](const Pair& p) { return cuda_extension(p.tu); }, "preferred the .cu translation unit");
  }

  void narrow_by_image(std::vector<Pair>& pairs) {
    std::set<std::string> image;
    for (const auto& m : q_.image_kernels) image.insert(names::parse_kernel_name(m).qualified());
    std::vector<int> score(pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
      std::vector<fs::path> files = {pairs[i].tu};
      files.insert(files.end(), pairs[i].closure->files.begin(), pairs[i].closure->files.end());
      std::set<std::string> seen;
      for (const auto& f : files)
        for (const auto& d : kernels_in(f, scan_.markers, cache_)) {
          if (!d.definition || !seen.insert(d.qualified()).second) continue;
          if (image.count(d.qualified())) ++score[i];
          else if (!d.is_template) --score[i];  // a plain kernel of the unit would be in its image
        }
    }
    const int best = *std::max_element(score.begin(), score.end());
    size_t i = 0;
    filter(pairs, [&](const Pair&) { return score[i++] == best; },
           fmt::format("the captured image's {} kernel(s) match the kept unit's kernels best", image.size()));
  }

  void ambiguous(const std::vector<Pair>& pairs) {
    std::vector<Candidate> left;
    for (const auto& p : pairs) left.push_back({p.loc->file, p.loc->def.line, p.tu, ""});
    classify_ambiguous(left, r_);
  }

  void finish(const Pair& p) {
    r_.definition = p.loc->file;
    r_.line = p.loc->def.line;
    r_.tu = p.tu;
    r_.search = p.sp;
    r_.includes = *p.closure;
    std::string reason;
    if (header_like(p.tu))
      r_.notes.push_back(fmt::format("no .cu file under {} includes {}: kernel_variant.cu is the header itself, which "
                                     "does not compile to the kernel alone (is --source-dir the whole project?)",
                                     r_.tree.string(), display(p.tu, r_.tree)));
    if (p.cmd) {
      r_.command = *p.cmd;
      r_.compile_db = db_->path;
    } else if (db_) {
      reason = fmt::format("{} has no CUDA compile command for {}.", db_->path.string(), display(p.tu, r_.tree));
    } else {
      reason = "No compile_commands.json was given or found next to the source tree.";
      r_.notes.push_back("includes were traced without the build's -I flags (the tree root and include/ only)");
    }
    classify_found(r_, reason);
  }

  const Request& q_;
  const TreeScan& scan_;
  const CompileDb* db_;
  SourceCache& cache_;
  Result& r_;
  std::map<std::string, IncludeClosure> closures_;
  std::optional<std::vector<fs::path>> tree_files_;
};

}  // namespace

std::vector<std::string> compiler_argv(const CompileCommand& c) {
  std::vector<std::string> v = c.argv;
  while (v.size() > 1 && is_launcher(v.front())) v.erase(v.begin());
  return v;
}

SearchPaths search_paths_of(const CompileCommand& c) {
  auto argv = compiler_argv(c);
  return search_paths(parse_args(std::vector<std::string>(argv.begin() + 1, argv.end())), c.directory);
}

bool compiles_cuda(const CompileCommand& c) {
  auto argv = compiler_argv(c);
  if (argv.empty()) return false;
  switch (compiler_of(argv.front())) {
    case Compiler::Nvcc: return true;
    case Compiler::Clang: {
      if (cuda_extension(c.file)) return true;
      for (size_t i = 1; i + 1 < argv.size(); ++i)
        if (argv[i] == "-x" && argv[i + 1] == "cuda") return true;
      return std::find(argv.begin(), argv.end(), "-xcuda") != argv.end();
    }
    case Compiler::Other: return false;
  }
  return false;
}

void choose_translation_unit(const Request& q, const TreeScan& scan, const std::vector<const Located*>& defs,
                             const CompileDb* db, SourceCache& cache, Result& r) {
  Chooser(q, scan, db, cache, r).run(defs);
}

}  // namespace kerncap::source
