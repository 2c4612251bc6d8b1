#pragma once
// Shared by the strategy files of `kerncap locate` (not part of its interface).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "names/kernel_name.hpp"
#include "source/locate.hpp"

namespace kerncap::source {

struct Locator::Context {
  const LocateRules& rules;
  const LocateRule& rule;
  const std::vector<RepoIndex>& repos;
  SourceCache& cache;
  names::KernelName name;
  LocateResult& out;
};

// Namespaces written around a definition against those of a name; a namespace named by a
// macro (ALL_CAPS) fits any.
bool scopes_fit(const std::vector<std::string>& written, const std::vector<std::string>& named);

// Files of `repo` holding `word`, restricted to paths under one of `under` (all when empty),
// in the order of `under`.
std::vector<uint32_t> files_under(const RepoIndex& repo, const std::string& word, const std::vector<std::string>& under);

// __global__ definitions (and kernels a function-like macro defines) named `base` whose
// namespaces are `scopes` (any namespaces when `any_scope`).
std::vector<SourceRef> kernel_definitions(Locator::Context& c, const RepoIndex& repo, const std::string& base,
                                          const std::vector<std::string>& scopes, bool any_scope,
                                          const std::vector<std::string>& under);

// The Python functions and classes that lead to a Triton kernel: word -> steps from the
// kernel (0: the kernel), and the modules they live in.
struct PythonCallers {
  std::map<std::string, int> depth;
  std::set<std::string> files;
};

// Test files mentioning `words` and a command for the best; fills c.out.tests/test_command.
void find_tests(Locator::Context& c, const RepoIndex& repo, const std::set<std::string>& words,
                const std::string& op, const PythonCallers* callers = nullptr);

// The command a [[test]] rule gives for the found file, if one fits.
bool test_from_rules(Locator::Context& c, const RepoIndex& repo, const std::string& rel, const std::string& op);

void locate_aten(Locator::Context& c);

}  // namespace kerncap::source
