#pragma once
// The table `kerncap locate` works from (src/source/locate_rules.toml, compiled in and
// installed as share/kerncap/locate_rules.toml; users add their own with --rules FILE).
// Which rule applies to a kernel name, how to search for it, and which test command a
// found source file gets. docs/locate.md describes the format.
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "names/classify.hpp"

namespace kerncap::source {

enum class Strategy { Closed, Generated, Aten, Triton, Cxx, Cutlass };
std::string_view to_string(Strategy s);

struct LocateRule {
  std::string name;
  std::vector<names::Kind> kinds;  // written as names::to_string(Kind) values; empty = any
  std::string match;               // regex on the demangled name; empty = any
  std::shared_ptr<std::regex> match_re;
  Strategy strategy = Strategy::Cxx;
  std::string library, reproduce;  // Closed
  std::vector<std::string> under;  // Aten, Cxx
  std::vector<std::string> templates, tests_under;  // Cutlass
  // Aten: identifiers of the name that are functors (regex), functors that only wrap the
  // real one, functions whose lambdas only wrap the kernel's, and functors written by a code
  // generator (regex; its last group names the function holding the body, under codegen_under).
  std::string functors;
  std::shared_ptr<std::regex> functors_re, codegen_re;
  std::vector<std::string> wrappers, helpers, codegen_under;
  std::string codegen;
};

struct TestRule {
  std::string file;  // regex on the repository-relative path of the source found
  std::shared_ptr<std::regex> file_re;
  std::string op;             // regex the ATen op must fit ("" = any op, or none)
  std::shared_ptr<std::regex> op_re;
  std::string requires_path;  // must exist in the repository ("" = nothing)
  std::string command;        // {op}, {kernel}, {file}
};

struct LocateRules {
  std::vector<LocateRule> rules;
  std::vector<TestRule> tests;
  std::map<std::string, std::string> ops;  // functor or function -> ATen op
};

// The built-in table.
const std::string& builtin_rules_text();

// Parses a rules file; `source` names it in messages. Throws Error(Input) with file:line for
// an unknown key, a wrong type, a bad regex (or one over 1 KiB, or grouped over 16 deep: the
// message names the rule and key) or an unknown strategy.
LocateRules parse_locate_rules(std::string_view text, const std::string& source);

// The built-in rules with `user` (a file's contents) in front; throws Error(Usage) when a
// file does not exist, Error(Input) when it is not a regular file (a FIFO, a device, a
// directory) or is larger than 1 MiB (read through format::ReadOnlyFile).
LocateRules load_locate_rules(const std::vector<std::string>& user_files);

}  // namespace kerncap::source
