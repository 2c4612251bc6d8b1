// `kerncap locate`: rule selection and the strategies for Triton, C++ (__global__), CUTLASS,
// closed-source libraries and generated kernels; ATen lives in locate_aten.cpp.
#include "source/locate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "names/demangle.hpp"
#include "source/cxx_scan.hpp"
#include "source/definitions.hpp"
#include "source/locate_internal.hpp"
#include "names/regex_search.hpp"

namespace kerncap::source {

std::string_view to_string(LocateStatus s) {
  switch (s) {
    case LocateStatus::Found: return "found";
    case LocateStatus::ClosedSource: return "closed-source";
    case LocateStatus::Generated: return "generated";
    case LocateStatus::NotFound: return "not-found";
  }
  return "?";
}

namespace {

bool under_any(const std::string& rel, const std::vector<std::string>& under) {
  if (under.empty()) return true;
  for (const auto& u : under)
    if (rel.starts_with(u) && (rel.size() == u.size() || rel[u.size()] == '/' || u.ends_with("/"))) return true;
  return false;
}

std::string read_file_text(SourceCache& cache, const fs::path& p) {
  const std::string* t = cache.text(p);
  return t ? *t : std::string();
}

bool contains_word(std::string_view text, std::string_view word) {
  auto id = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (size_t p = text.find(word); p != std::string_view::npos; p = text.find(word, p + 1))
    if ((p == 0 || !id(text[p - 1])) && (p + word.size() >= text.size() || !id(text[p + word.size()]))) return true;
  return false;
}

// NAME as an identifier outside `#` comments.
bool python_code_mentions(const std::string& text, const std::string& word) {
  const std::regex re("\\b" + word + "\\b");
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (line.find(word) != std::string::npos && names::regex_search_text(line, re)) return true;
  }
  return false;
}

// `import ... NAME` on one line, or `from m import (\n    a,\n    NAME,\n)` over several.
bool imports_word(const std::string& text, const std::string& word) {
  return names::regex_search_text(text, std::regex("import[^\\n]*\\b" + word + "\\b|import\\s*\\([^)]*\\b" + word + "\\b"));
}

// The CMake target that compiles `rel` (add_executable(T ... file.cu) and look-alikes such as
// cutlass_example_add_executable), from the CMakeLists.txt of its folder or the one above.
std::string cmake_target(const RepoIndex& repo, const std::string& rel, SourceCache& cache) {
  const fs::path file = fs::path(rel);
  const std::string leaf = file.filename().string();
  for (fs::path dir = file.parent_path(); ; dir = dir.parent_path()) {
    const std::string text = read_file_text(cache, repo.root / dir / "CMakeLists.txt");
    if (!text.empty()) {
      static const std::regex call(R"(([A-Za-z_]\w*)\s*\(\s*([A-Za-z0-9_.+-]+)([^()]*)\))");
      for (std::sregex_iterator m(text.begin(), text.end(), call), e; m != e; ++m) {
        const std::string fn = (*m)[1].str();
        if (fn.find("add_executable") == std::string::npos && fn.find("add_test") == std::string::npos) continue;
        if (contains_word((*m)[3].str(), file.stem().string()) && (*m)[3].str().find(leaf) != std::string::npos)
          return (*m)[2].str();
      }
    }
    if (dir.empty() || dir == dir.parent_path()) break;
  }
  return {};
}

// The outermost `def`/`class` of Python text around each launch `word[...]`, call
// `word(...)` or use `word.apply(...)`: the host function that launches a Triton kernel, or the autograd class that
// calls that function (what tests import).
std::set<std::string> python_wrappers(const std::string& text, const std::string& word) {
  std::set<std::string> out;
  std::vector<std::pair<size_t, std::string>> defs;  // indentation, name
  static const std::regex def_re(R"(^(\s*)(async\s+def|def|class)\s+([A-Za-z_]\w*))");
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t indent = line.find_first_not_of(" \t");
    if (indent == std::string::npos || line[indent] == '#' || line[indent] == ')') continue;
    while (!defs.empty() && defs.back().first >= indent) defs.pop_back();
    std::smatch m;
    if (std::regex_search(line, m, def_re)) {
      defs.emplace_back(m[1].length(), m[3].str());
      continue;
    }
    for (size_t at = line.find(word); at != std::string::npos; at = line.find(word, at + 1)) {
      const size_t after = at + word.size();
      const bool starts = at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
      // NAME[grid](...), NAME(...), NAME.apply(...), (a if c else b)[grid](...) choosing a
      // kernel, specialize(NAME, ...): any use of the name inside a function
      const bool ends = after >= line.size() || !(std::isalnum(static_cast<unsigned char>(line[after])) || line[after] == '_');
      if (starts && ends && !defs.empty() &&
          defs.front().second != word)
        out.insert(defs.front().second);
    }
  }
  return out;
}

// What tests of a Triton kernel name: the kernel, the function that launches it, the
// autograd class that calls that, the public function that applies the class, the one that
// calls it... up to five levels, following imports across the package's (non-test) modules
// (triton_kernels: _topk_forward -> topk_forward -> TopK -> topk -> routing, which
// tests/test_routing.py imports).
PythonCallers python_callers(Locator::Context& c, const RepoIndex& repo, const SourceRef& def, const std::string& kernel) {
  // The kernel itself is the first level: its launch may sit in the module that defines it
  // or in one that imports it (triton_kernels launches _topk_forward from topk.py).
  PythonCallers out;
  out.files.insert(def.file);
  std::set<std::string> level = {kernel};
  for (int depth = 0; depth < 5 && !level.empty() && out.depth.size() < 32; ++depth) {
    std::set<std::string> next;
    for (const auto& w : level) {
      if (!out.depth.emplace(w, depth).second) continue;
      for (uint32_t id : repo.files_with(w)) {
        const std::string& rel = repo.files[id];
        if (!rel.ends_with(".py") || is_test_path(rel)) continue;
        const std::string text = read_file_text(c.cache, repo.path(id));
        // The module that defines the word or imports it: a namesake elsewhere is not a caller.
        if (rel != def.file &&
            !(imports_word(text, w) || names::regex_search_text(text, std::regex("(def|class)\\s+" + w + "\\b"))))
          continue;
        for (const auto& outer : python_wrappers(text, w))
          if (!out.depth.count(outer)) {
            next.insert(outer);
            out.files.insert(rel);
          }
      }
    }
    level = std::move(next);
  }
  for (const auto& w : level) out.depth.emplace(w, 5);
  return out;
}

// Shallower paths first: among namesakes, the main implementation rather than a backend's
// copy (src/pkg/ops/x.py before src/pkg/ops/backends/npu/ops/x.py).
void shallow_first(std::vector<SourceRef>& refs) {
  std::stable_sort(refs.begin(), refs.end(), [](const SourceRef& a, const SourceRef& b) {
    return std::count(a.file.begin(), a.file.end(), '/') < std::count(b.file.begin(), b.file.end(), '/');
  });
}

std::string test_command_for(const RepoIndex& repo, const std::string& rel, const std::set<std::string>& words,
                             SourceCache& cache) {
  if (rel.ends_with(".py")) {
    const std::string text = read_file_text(cache, repo.root / rel);
    for (const auto& word : words) {
      const std::string w = word.substr(std::min(word.find_first_not_of('_'), word.size()));
      if (w.size() < kMinWord) continue;
      const std::regex t("def\\s+test\\w*" + w);
      if (names::regex_search_text(text, t)) return fmt::format("pytest {} -k {}", rel, w);
    }
    return fmt::format("pytest {}", rel);
  }
  const std::string target = cmake_target(repo, rel, cache);
  if (!target.empty()) return fmt::format("cmake --build build --target {} && ctest --test-dir build -R {}", target, target);
  return {};
}

void closed(Locator::Context& c) {
  c.out.status = LocateStatus::ClosedSource;
  c.out.library = c.rule.library;
  c.out.reproduce = c.rule.reproduce;
}

void generated(Locator::Context& c, const LocateOptions& opt) {
  c.out.status = LocateStatus::Generated;
  const std::string& name = c.name.base;
  c.out.notes.push_back(
      "written by TorchInductor at run time: TORCH_LOGS=output_code prints the module holding it, with the "
      "model code that produced it (\"Source Nodes\" / \"Original ATen\" comments); `kerncap extract " + name +
      "` records its source in OUT/triton/sources/");
  if (!opt.capture) return;
  const fs::path dir = *opt.capture / "triton" / "sources";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    c.out.notes.push_back(fmt::format("{} holds no recorded Triton sources ({} is missing)", opt.capture->string(), dir.string()));
    return;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".py") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const std::string text = read_file_text(c.cache, f);
    for (const auto& [fn, line] : triton_functions(text)) {
      if (fn != name) continue;
      c.out.sources.push_back({{}, f.string(), line, "recorded @triton.jit " + fn});
      static const std::regex origin(R"(#\s*(Topologically Sorted )?Source Nodes:[^\n]*|#\s*Original ATen:[^\n]*)");
      for (std::sregex_iterator m(text.begin(), text.end(), origin), e; m != e; ++m)
        c.out.notes.push_back("model code: " + m->str());
    }
  }
  if (c.out.sources.empty())
    c.out.notes.push_back(fmt::format("no recorded source in {} defines {}", dir.string(), name));
}

void triton(Locator::Context& c) {
  const std::string& name = c.name.base;
  for (const auto& repo : c.repos) {
    // Exact, else the longest defined name the reported one starts with at a "_" (Triton
    // 2.x suffixes the signature, triton_kernels specializes names: _matmul_ogs_NNT_...).
    std::string found;
    if (repo.triton.count(name)) found = name;
    else
      for (size_t us = name.rfind('_'); us != std::string::npos && us >= 4; us = us ? name.rfind('_', us - 1) : std::string::npos) {
        const std::string prefix = name.substr(0, us);
        if (repo.triton.count(prefix)) { found = prefix; break; }
        if (us == 0) break;
      }
    if (found.empty()) continue;
    std::vector<SourceRef> defs;
    for (const auto& d : repo.triton.at(found)) defs.push_back({repo.root, repo.files[d.file], d.line, "@triton.jit " + found});
    shallow_first(defs);
    c.out.sources.insert(c.out.sources.end(), defs.begin(), defs.end());
    if (found != name) c.out.notes.push_back(fmt::format("{} is {} specialized (its name carries the specialization)", name, found));
    if (c.out.status == LocateStatus::NotFound) {
      c.out.status = LocateStatus::Found;
      // The kernel, the functions that launch it, and the functions or classes that call
      // those, in the module of the first definition.
      const PythonCallers callers = python_callers(c, repo, defs.front(), found);
      std::set<std::string> words;
      for (const auto& [w, d] : callers.depth) words.insert(w);
      find_tests(c, repo, words, "", &callers);
    }
  }
}

void cxx(Locator::Context& c) {
  for (const auto& repo : c.repos) {
    auto defs = kernel_definitions(c, repo, c.name.base, c.name.scopes, !c.name.cxx, c.rule.under);
    if (defs.empty()) continue;
    shallow_first(defs);
    const bool first = c.out.sources.empty();
    c.out.sources.insert(c.out.sources.end(), defs.begin(), defs.end());
    if (!first) continue;
    c.out.status = LocateStatus::Found;
    std::set<std::string> words = {c.name.base};
    for (const auto& d : defs)
      if (const auto* toks = c.cache.tokens(d.path()))
        for (const auto& w : functions_mentioning(*toks, c.name.base)) words.insert(w);
    if (!test_from_rules(c, repo, defs.front().file, "")) find_tests(c, repo, words, "");
  }
  if (c.out.sources.size() > 1)
    c.out.notes.push_back(fmt::format("{} definitions fit (overloads, or one per build variant)", c.out.sources.size()));
}

// A file that is a program or a test by itself (not a header an example includes).
bool runnable(const std::string& rel) {
  const std::string ext = fs::path(rel).extension().string();
  return ext == ".cu" || ext == ".cpp" || ext == ".cc" || ext == ".cxx" || ext == ".py";
}

// Identifiers that say nothing about which specialization a CUTLASS name instantiates.
bool generic_word(const std::string& w) {
  static const std::set<std::string> s = {"cute", "cutlass", "std", "enable_if_t", "enable_if", "is_base_of_v",
                                          "is_same_v", "is_same", "typename", "void", "int", "bool", "true", "false",
                                          "value", "type", "conditional_t", "disable_if_t", "not", "and", "or",
                                          "unsigned", "long", "char", "float", "double", "const", "Schedule",
                                          "DispatchPolicy", "Params", "device_kernel", "gemm", "kernel", "collective",
                                          "epilogue", "arch", "layout", "detail"};
  return w.ends_with("_") || s.count(w) > 0;
}

std::set<std::string> name_words(const std::string& demangled) {
  std::set<std::string> out;
  for (auto w : identifiers(demangled)) out.insert(std::string(w));
  return out;
}

void cutlass(Locator::Context& c) {
  const std::set<std::string> words = name_words(c.out.demangled);
  // A plain __global__ in a CUTLASS namespace (the reference kernels, Kernel<...> wrappers
  // of names without a known template): the C++ rule's answer.
  const bool any = std::any_of(c.rule.templates.begin(), c.rule.templates.end(), [&](const std::string& t) {
    return names::regex_search_text(c.out.demangled, std::regex("(^|[^A-Za-z0-9_])" + t + "<"));
  });
  if (!any) return cxx(c);
  for (const auto& repo : c.repos) {
    std::vector<SourceRef> found;
    for (const auto& tmpl : c.rule.templates) {
      if (!names::regex_search_text(c.out.demangled, std::regex("(^|[^A-Za-z0-9_])" + tmpl + "<"))) continue;
      struct Cand { SourceRef ref; int score; bool spec; };
      std::vector<Cand> cands;
      for (uint32_t id : repo.files_with(tmpl)) {
        if (under_any(repo.files[id], c.rule.tests_under) || repo.files[id].ends_with(".py")) continue;
        const auto* toks = c.cache.tokens(repo.path(id));
        if (!toks) continue;
        for (const auto& d : type_definitions(*toks, tmpl)) {
          int score = 0;
          std::set<std::string> seen;
          // A head word the name holds counts for it; a schedule or mainloop tag the name
          // lacks (KernelTmaWarpSpecializedPingpong for a cooperative kernel) against it.
          static const std::regex tag("^(Kernel|Mainloop|Sm[0-9])");
          for (const auto& h : d.head) {
            if (generic_word(h) || !seen.insert(h).second) continue;
            if (words.count(h)) ++score;
            else if (std::regex_search(h, tag)) --score;
          }
          cands.push_back({{repo.root, repo.files[id], d.line, ""}, score, d.specialization});
        }
      }
      if (cands.empty()) continue;
      // CUTLASS's folders follow its namespaces: cutlass::gemm::kernel::GemmUniversal lives
      // under gemm/kernel/, cutlass::gemm::device::GemmUniversal under gemm/device/.
      std::smatch q;
      if (std::regex_search(c.out.demangled, q, std::regex("((?:[A-Za-z_]\\w*::)+)" + tmpl + "<"))) {
        std::string dir = q[1].str();
        if (dir.starts_with("cutlass::")) dir = dir.substr(9);
        for (size_t p = dir.find("::"); p != std::string::npos; p = dir.find("::", p + 1)) dir.replace(p, 2, "/");
        if (!dir.empty()) {
          std::vector<Cand> placed;
          for (const auto& k : cands)
            if (("/" + k.ref.file).find("/" + dir) != std::string::npos) placed.push_back(k);
          if (!placed.empty()) cands = std::move(placed);
        }
      }
      int best = -1;
      for (const auto& k : cands) best = std::max(best, k.score);
      std::vector<Cand> top;
      for (const auto& k : cands)
        if (k.score == best) top.push_back(k);
      // Nothing in the name speaks for any specialization, and several fit as little:
      // the primary template, if it has a body, is the honest answer.
      if (best <= 0 && top.size() > 1) {
        std::vector<Cand> primary;
        for (const auto& k : top)
          if (!k.spec) primary.push_back(k);
        if (!primary.empty()) top = std::move(primary);
      }
      if (top.empty()) continue;
      const bool kernel = found.empty();
      for (auto& k : top) {
        k.ref.what = fmt::format("{} {}{}", kernel ? "kernel" : "collective", tmpl, k.spec ? " (specialization)" : "");
        found.push_back(k.ref);
      }
      if (top.size() > 1)
        c.out.notes.push_back(fmt::format("{} definitions of {} fit the name equally well", top.size(), tmpl));
    }
    if (found.empty()) continue;
    const bool first = c.out.sources.empty();
    c.out.sources.insert(c.out.sources.end(), found.begin(), found.end());
    if (!first) continue;
    c.out.status = LocateStatus::Found;
    if (test_from_rules(c, repo, found.front().file, "")) continue;
    // The closest example or unit test: the one sharing the most distinctive identifiers
    // with the name (a rare word counts more than a common one).
    const double n = static_cast<double>(repo.files.size());
    std::map<uint32_t, double> score;
    for (const auto& w : words) {
      if (generic_word(w)) continue;
      const auto files = repo.files_with(w);
      if (files.empty() || files.size() > repo.files.size() / 4) continue;
      const double weight = std::log(n / static_cast<double>(files.size()));
      for (uint32_t id : files)
        if (!c.rule.tests_under.empty() && under_any(repo.files[id], c.rule.tests_under) && runnable(repo.files[id]))
          score[id] += weight;
    }
    std::vector<std::pair<double, uint32_t>> ranked;
    for (const auto& [id, s] : score) ranked.emplace_back(-s, id);
    std::sort(ranked.begin(), ranked.end());
    for (size_t i = 0; i < ranked.size() && i < 3; ++i)
      c.out.tests.push_back({repo.root, repo.files[ranked[i].second], 0, fmt::format("score {:.1f}", -ranked[i].first)});
    if (!c.out.tests.empty()) {
      c.out.test_command = test_command_for(repo, c.out.tests.front().file, {}, c.cache);
      c.out.test_cwd = repo.root;
    }
  }
}

const LocateRule* pick_rule(const LocateRules& rules, const names::Classification& cls, const std::string& demangled) {
  for (const auto& r : rules.rules) {
    if (!r.kinds.empty() && std::find(r.kinds.begin(), r.kinds.end(), cls.kind) == r.kinds.end()) continue;
    if (r.match_re && !names::regex_search_text(demangled, *r.match_re)) continue;
    return &r;
  }
  return nullptr;
}

}  // namespace

bool scopes_fit(const std::vector<std::string>& written, const std::vector<std::string>& named) {
  if (written.size() != named.size()) return false;
  for (size_t i = 0; i < written.size(); ++i) {
    if (written[i] == named[i]) continue;
    // `namespace FLASH_NAMESPACE {`: a namespace named by a macro (flash-attention) fits any name.
    const bool macro = std::none_of(written[i].begin(), written[i].end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); }) &&
                       written[i].find('_') != std::string::npos;
    if (!macro) return false;
  }
  return true;
}

std::vector<uint32_t> files_under(const RepoIndex& repo, const std::string& word, const std::vector<std::string>& under) {
  const auto all = repo.files_with(word);
  if (under.empty()) return all;
  std::vector<uint32_t> out;
  for (const auto& u : under)
    for (uint32_t id : all)
      if (under_any(repo.files[id], {u}) && std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  return out;
}

std::vector<SourceRef> kernel_definitions(Locator::Context& c, const RepoIndex& repo, const std::string& base,
                                          const std::vector<std::string>& scopes, bool any_scope,
                                          const std::vector<std::string>& under) {
  std::vector<SourceRef> out;
  std::set<std::string> macro_names;  // X in `X(base, ...)`: maybe a macro that defines kernels
  for (uint32_t id : files_under(repo, base, under)) {
    if (repo.files[id].ends_with(".py") || repo.files[id].ends_with(".pyi")) continue;
    const auto* toks = c.cache.tokens(repo.path(id));
    if (!toks) continue;
    for (const auto& d : find_kernels(*toks, global_macros(*toks)))
      if (d.name == base && d.definition && (any_scope || scopes_fit(d.scopes, scopes)))
        out.push_back({repo.root, repo.files[id], d.line, "__global__ " + d.qualified()});
    for (size_t i = 0; i + 2 < toks->size(); ++i)
      if ((*toks)[i].kind == TokKind::Ident && (*toks)[i + 1].text == "(" && (*toks)[i + 2].text == base &&
          (*toks)[i].text.find_first_of("abcdefghijklmnopqrstuvwxyz") == std::string::npos)
        macro_names.insert((*toks)[i].text);
  }
  if (!out.empty() || macro_names.empty()) return out;
  // flash-attention defines its kernels through DEFINE_FLASH_FORWARD_KERNEL(name, ...).
  std::set<std::string> macros;
  for (const auto& m : macro_names)
    for (uint32_t id : repo.files_with(m))
      if (const auto* toks = c.cache.tokens(repo.path(id)))
        for (const auto& k : kernel_defining_macros(*toks))
          if (k == m) macros.insert(k);
  if (macros.empty()) return out;
  for (uint32_t id : files_under(repo, base, under))
    if (const auto* toks = c.cache.tokens(repo.path(id)))
      for (uint32_t line : macro_kernel_definitions(*toks, macros, base))
        out.push_back({repo.root, repo.files[id], line, "__global__ " + base + " (defined through a macro)"});
  return out;
}

bool test_from_rules(Locator::Context& c, const RepoIndex& repo, const std::string& rel, const std::string& op) {
  for (const auto& t : c.rules.tests) {
    if (!std::regex_search(rel, *t.file_re)) continue;
    if (t.op_re && (op.empty() || !std::regex_search(op, *t.op_re))) continue;
    std::error_code ec;
    if (!t.requires_path.empty() && !fs::exists(repo.root / t.requires_path, ec)) continue;
    if (t.command.find("{op}") != std::string::npos && op.empty()) continue;
    std::string cmd = t.command;
    auto sub = [&](const std::string& key, const std::string& v) {
      for (size_t p = cmd.find(key); p != std::string::npos; p = cmd.find(key, p + v.size())) cmd.replace(p, key.size(), v);
    };
    sub("{op}", op);
    sub("{kernel}", c.name.base);
    sub("{file}", rel);
    c.out.test_command = cmd;
    c.out.test_cwd = repo.root;
    if (!t.requires_path.empty()) c.out.tests.push_back({repo.root, t.requires_path, 0, "test rule"});
    return true;
  }
  return false;
}

void find_tests(Locator::Context& c, const RepoIndex& repo, const std::set<std::string>& words, const std::string& op,
                const PythonCallers* callers) {
  // Test files that import one of the words first, then those that only mention one; for a
  // Triton kernel, a word closer to the kernel (the launcher before the package's entry
  // point) counts more, and test_X.py for a module X.py on the way counts too.
  std::map<uint32_t, int> score;
  auto closeness = [&](const std::string& w) {
    if (!callers) return 1;
    auto it = callers->depth.find(w);
    return it == callers->depth.end() ? 1 : 6 - it->second;
  };
  for (const auto& w : words)
    for (uint32_t id : repo.files_with(w)) {
      const std::string& rel = repo.files[id];
      if (!is_test_path(rel)) continue;
      // A Python test naming the word only in a comment does not test it.
      if (rel.ends_with(".py") && !python_code_mentions(read_file_text(c.cache, repo.path(id)), w)) continue;
      score[id] += w == c.name.base ? 2 : 1;
    }
  std::set<std::string> stems;
  if (!c.out.sources.empty()) stems.insert(fs::path(c.out.sources.front().file).stem().string());
  if (callers)
    for (const auto& f : callers->files) stems.insert(fs::path(f).stem().string());
  std::vector<std::tuple<int, std::string, uint32_t>> ranked;
  for (const auto& [id, s] : score) {
    int total = s;
    // test_rms_norm.py for a kernel defined in rms_norm.py
    const std::string test_stem = fs::path(repo.files[id]).stem().string();
    for (const auto& st : stems) {
      const std::string bare = st.substr(std::min(st.find_first_not_of('_'), st.size()));
      if (!bare.empty() && test_stem == "test_" + bare) total += 3;
    }
    if (repo.files[id].ends_with(".py")) {
      const std::string text = read_file_text(c.cache, repo.path(id));
      for (const auto& w : words)
        if (imports_word(text, w)) total += 2 + 2 * closeness(w);
    }
    ranked.emplace_back(-total, repo.files[id], id);
  }
  std::sort(ranked.begin(), ranked.end());
  for (size_t i = 0; i < ranked.size() && i < 5; ++i)
    c.out.tests.push_back({repo.root, std::get<1>(ranked[i]), 0, "mentions " + *words.begin()});
  if (c.out.tests.empty()) return;
  std::set<std::string> k = words;
  if (!op.empty()) k.insert(op);
  c.out.test_command = test_command_for(repo, c.out.tests.front().file, k, c.cache);
  c.out.test_cwd = repo.root;
}

Locator::Locator(LocateRules rules, std::vector<RepoIndex> repos) : rules_(std::move(rules)), repos_(std::move(repos)) {}

LocateResult Locator::locate(std::string_view name_in, const LocateOptions& opt) {
  LocateResult out;
  out.name = std::string(name_in);
  const bool mangled = names::is_mangled(name_in);
  out.demangled = mangled ? names::demangle(name_in) : out.name;
  // A demangled C++ name given by hand ("void ns::k<int>(int*)") is C++ all the same: the
  // classifier only asks whether the reported name was mangled.
  const bool cxx_text = !mangled && out.demangled.find('(') != std::string::npos;
  out.cls = names::classify(cxx_text ? std::string_view("_Z") : name_in, out.demangled);
  names::KernelName k;
  if (mangled) k = names::parse_kernel_name(name_in, out.demangled);
  else if (out.demangled.find("::") != std::string::npos && !out.demangled.ends_with(")"))
    k = names::parse_kernel_name("", out.demangled + "()");  // "ns::kernel": namespaces known, parameters not
  else k = names::parse_kernel_name("", out.demangled);
  const LocateRule* rule = pick_rule(rules_, out.cls, out.demangled);
  if (!rule) {
    out.notes.push_back("no locate rule applies to this name");
    return out;
  }
  out.rule = rule->name;
  out.strategy = rule->strategy;
  Context c{rules_, *rule, repos_, cache_, k, out};
  switch (rule->strategy) {
    case Strategy::Closed: closed(c); break;
    case Strategy::Generated: generated(c, opt); break;
    case Strategy::Triton: triton(c); break;
    case Strategy::Cxx: cxx(c); break;
    case Strategy::Cutlass: cutlass(c); break;
    case Strategy::Aten: locate_aten(c); break;
  }
  if (out.status == LocateStatus::NotFound && repos_.empty())
    out.notes.push_back("no --source-repo given: nothing to search");
  return out;
}

}  // namespace kerncap::source
