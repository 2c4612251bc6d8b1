#pragma once
// `kerncap locate`: from a kernel name (as a profile reports it) to the file and line that
// define it in the repositories the user has checked out, and to a test command. Driven by
// the locate rules (locate_rules.hpp); each repository is indexed once (repo_index.hpp).
// Never throws for what it cannot find: the result says so.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "names/classify.hpp"
#include "source/includes.hpp"
#include "source/locate_rules.hpp"
#include "source/repo_index.hpp"

namespace kerncap::source {

namespace fs = std::filesystem;

enum class LocateStatus { Found, ClosedSource, Generated, NotFound };
std::string_view to_string(LocateStatus s);  // "found", "closed-source", "generated", "not-found"

struct SourceRef {
  fs::path repo;     // the --source-repo it is in (canonical); empty for a capture's file
  std::string file;  // relative to repo (absolute when repo is empty)
  uint32_t line = 0;
  std::string what;  // "functor FillFunctor", "__global__ rms_norm_kernel", "collective CollectiveMma", ...
  fs::path path() const { return repo.empty() ? fs::path(file) : repo / file; }
};

struct LocateResult {
  std::string name;       // as given
  std::string demangled;
  names::Classification cls;
  std::string rule;       // the rule that decided
  Strategy strategy = Strategy::Cxx;
  LocateStatus status = LocateStatus::NotFound;
  std::vector<SourceRef> sources;  // the first is the answer
  std::vector<SourceRef> tests;    // test files, best first
  std::string test_command;        // run in test_cwd
  fs::path test_cwd;
  std::string library, reproduce;  // closed source
  std::vector<std::string> notes;
};

struct LocateOptions {
  std::optional<fs::path> capture;  // a capture directory (OUT) whose recorded Triton sources to read
};

class Locator {
 public:
  Locator(LocateRules rules, std::vector<RepoIndex> repos);
  // `name`: mangled, demangled or a plain (Triton / extern "C") name.
  LocateResult locate(std::string_view name, const LocateOptions& opt = {});
  const std::vector<RepoIndex>& repos() const { return repos_; }

  // For the strategy files (locate*.cpp).
  struct Context;

 private:
  LocateRules rules_;
  std::vector<RepoIndex> repos_;
  SourceCache cache_;
};

}  // namespace kerncap::source
