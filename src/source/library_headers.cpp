#include "source/library_headers.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string_view>

#include "source/args.hpp"
#include "source/choose.hpp"
#include "source/includes.hpp"

namespace kerncap::source {
namespace {

// thrust::THRUST_300001_SM_900_NS, cub::CUB_300001_SM_900 (CUB's has no _NS), cuda::std::__4:
// ABI-versioned inline namespaces that the source opens through macros.
bool versioned_namespace(std::string_view s) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  for (std::string_view lib : {"THRUST_", "CUB_"})
    if (s.starts_with(lib) && s.size() > lib.size() && digit(s[lib.size()])) return true;
  return s.size() >= 3 && s.starts_with("__") && std::all_of(s.begin() + 2, s.end(), digit);
}

fs::path on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::string_view rest(path);
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty()) continue;
    std::error_code ec;
    const fs::path p = fs::path(dir) / program;
    if (fs::is_regular_file(p, ec)) return p;
  }
  return {};
}

}  // namespace

std::vector<fs::path> library_include_dirs(const CompileDb& db, const fs::path& tree) {
  std::vector<fs::path> out, toolkit;
  std::set<fs::path> seen;
  auto add = [&](std::vector<fs::path>& to, const fs::path& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return;
    const fs::path c = canonical_or_self(dir);
    if (inside(c, tree) || !seen.insert(c).second) return;
    to.push_back(c);
  };
  for (const auto& e : db.entries) {
    const std::vector<std::string> argv = compiler_argv(e);
    if (argv.empty() || compiler_of(argv.front()) != Compiler::Nvcc) continue;
    const SearchPaths sp = search_paths_of(e);
    for (const auto* dirs : {&sp.quote, &sp.angle, &sp.system})
      for (const auto& d : *dirs) add(out, d);
    fs::path nvcc = argv.front();
    if (nvcc.has_parent_path()) nvcc = absolute_in(nvcc, e.directory);
    else nvcc = on_path(nvcc.string());
    if (nvcc.empty()) continue;
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(nvcc, ec);
    const fs::path root = (ec ? nvcc : real).parent_path().parent_path();
    add(toolkit, root / "include" / "cccl");
    add(toolkit, root / "include");
  }
  out.insert(out.end(), toolkit.begin(), toolkit.end());
  return out;
}

bool library_scopes_match(const std::vector<std::string>& kernel, const std::vector<std::string>& def) {
  std::vector<std::string> k;
  for (const auto& s : kernel)
    if (!versioned_namespace(s)) k.push_back(s);
  if (def.size() > k.size() || !std::equal(def.rbegin(), def.rend(), k.rbegin())) return false;
  static const std::set<std::string> outer = {"thrust", "cub", "cuda", "std"};
  return std::all_of(k.begin(), k.end() - static_cast<std::ptrdiff_t>(def.size()),
                     [](const std::string& s) { return outer.count(s) > 0; });
}

}  // namespace kerncap::source
