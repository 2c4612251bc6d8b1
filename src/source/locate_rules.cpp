// The locate rules through toml++ (header-only, as for kerncap.toml). Strict: unknown keys
// are refused so that a typo does not silently disable a rule.
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include "source/locate_rules.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "common/error.hpp"
#include "format/safe_file.hpp"

namespace kerncap::source {

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::Closed: return "closed";
    case Strategy::Generated: return "generated";
    case Strategy::Aten: return "aten";
    case Strategy::Triton: return "triton";
    case Strategy::Cxx: return "cxx";
    case Strategy::Cutlass: return "cutlass";
  }
  return "?";
}

namespace {

// A rules file is a short table written by hand (the built-in one is about 12 KiB).
constexpr uint64_t kMaxRulesFileBytes = uint64_t{1} << 20;
// libstdc++ compiles a regex by recursive descent, a few frames per character and per group:
// a long or deeply grouped pattern (rule files are shared like kerncap.toml) overflowed the
// stack (found by the fuzzer). The same bound as kerncap.toml's patterns; a pattern matches
// one kernel name or path, and none of the built-in ones needs more than a few groups deep.
constexpr size_t kMaxPatternBytes = 1024;
constexpr int kMaxPatternGroupDepth = 16;

// The deepest nesting of groups in an ECMAScript pattern: '(' outside a bracket expression
// and not escaped. A cheap scan, so that a pattern is refused before std::regex compiles it.
int group_depth(std::string_view re) {
  int depth = 0, deepest = 0;
  bool in_class = false;
  for (size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '\\') {
      ++i;  // the escaped character
    } else if (in_class) {
      if (c == ']') in_class = false;
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ')') {
      if (depth > 0) --depth;
    }
  }
  return deepest;
}

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void error(const toml::node& at, std::string_view what) const {
    input_error(fmt::format("{}:{}: {}", source_, at.source().begin.line, what));
  }
  std::string str(const toml::node& n, std::string_view key) const {
    if (!n.is_string()) error(n, fmt::format("{}: expected a string", key));
    return n.as_string()->get();
  }
  std::vector<std::string> strs(const toml::node& n, std::string_view key) const {
    if (!n.is_array()) error(n, fmt::format("{}: expected an array of strings", key));
    std::vector<std::string> out;
    for (const auto& e : *n.as_array()) out.push_back(str(e, key));
    return out;
  }
  // `where` names the table the pattern is in ([[rule]] "name", [[test]] N).
  std::shared_ptr<std::regex> regex(const toml::node& n, const std::string& re, std::string_view where,
                                    std::string_view key) const {
    if (re.size() > kMaxPatternBytes)
      error(n, fmt::format("{}: {}: a regular expression of {} bytes; at most {} are accepted", where, key, re.size(),
                           kMaxPatternBytes));
    if (const int depth = group_depth(re); depth > kMaxPatternGroupDepth)
      error(n, fmt::format("{}: {}: a regular expression with groups nested {} deep; at most {} are accepted", where,
                           key, depth, kMaxPatternGroupDepth));
    try {
      return std::make_shared<std::regex>(re, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      error(n, fmt::format("{}: {}: bad regular expression \"{}\": {}", where, key, re, e.what()));
    }
  }
  const toml::array& tables(const toml::node& n, std::string_view key) const {
    if (!n.is_array_of_tables()) error(n, fmt::format("{}: expected [[{}]] tables", key, key));
    return *n.as_array();
  }

  // `index` counts from 1 among the file's [[rule]] tables.
  LocateRule rule(const toml::table& t, size_t index) const {
    LocateRule r;
    bool has_strategy = false;
    const toml::node* name = t.get("name");
    const std::string where = name && name->is_string()
                                  ? fmt::format("[[rule]] \"{}\"", name->as_string()->get())
                                  : fmt::format("[[rule]] {}", index);
    for (const auto& [k, v] : t) {
      const std::string key(k.str());
      if (key == "name") r.name = str(v, key);
      else if (key == "kinds") {
        for (const auto& kind : strs(v, key)) {
          const auto known = names::kind_from_string(kind);
          if (!known) error(v, fmt::format("kinds: unknown kind \"{}\"", kind));
          r.kinds.push_back(*known);
        }
      } else if (key == "match") {
        r.match = str(v, key);
        r.match_re = regex(v, r.match, where, key);
      } else if (key == "strategy") {
        const std::string s = str(v, key);
        has_strategy = true;
        if (s == "closed") r.strategy = Strategy::Closed;
        else if (s == "generated") r.strategy = Strategy::Generated;
        else if (s == "aten") r.strategy = Strategy::Aten;
        else if (s == "triton") r.strategy = Strategy::Triton;
        else if (s == "cxx") r.strategy = Strategy::Cxx;
        else if (s == "cutlass") r.strategy = Strategy::Cutlass;
        else error(v, fmt::format("strategy: unknown \"{}\" (known: closed, generated, aten, triton, cxx, cutlass)", s));
      } else if (key == "library") r.library = str(v, key);
      else if (key == "reproduce") r.reproduce = str(v, key);
      else if (key == "under") r.under = strs(v, key);
      else if (key == "templates") r.templates = strs(v, key);
      else if (key == "tests_under") r.tests_under = strs(v, key);
      else if (key == "functors") {
        r.functors = str(v, key);
        r.functors_re = regex(v, r.functors, where, key);
      } else if (key == "wrappers") r.wrappers = strs(v, key);
      else if (key == "helpers") r.helpers = strs(v, key);
      else if (key == "codegen") {
        r.codegen = str(v, key);
        r.codegen_re = regex(v, r.codegen, where, key);
        if (r.codegen_re->mark_count() == 0) error(v, "codegen: needs a group (...) naming the function");
      } else if (key == "codegen_under") r.codegen_under = strs(v, key);
      else error(v, fmt::format("[[rule]]: unknown key \"{}\" (known: name, kinds, match, strategy, library, "
                                "reproduce, under, templates, tests_under, functors, wrappers, helpers, codegen, "
                                "codegen_under)", key));
    }
    if (!has_strategy) error(t, "[[rule]]: no strategy");
    if (r.name.empty()) r.name = std::string(to_string(r.strategy));
    return r;
  }

  TestRule test(const toml::table& t, size_t index) const {
    TestRule r;
    const std::string where = fmt::format("[[test]] {}", index);
    for (const auto& [k, v] : t) {
      const std::string key(k.str());
      if (key == "file") {
        r.file = str(v, key);
        r.file_re = regex(v, r.file, where, key);
      } else if (key == "op") {
        r.op = str(v, key);
        r.op_re = regex(v, r.op, where, key);
      } else if (key == "requires") r.requires_path = str(v, key);
      else if (key == "command") r.command = str(v, key);
      else error(v, fmt::format("[[test]]: unknown key \"{}\" (known: file, op, requires, command)", key));
    }
    if (!r.file_re || r.command.empty()) error(t, "[[test]]: needs file and command");
    return r;
  }

 private:
  std::string source_;
};

}  // namespace

LocateRules parse_locate_rules(std::string_view text, const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    input_error(fmt::format("{}:{}: {}", source, e.source().begin.line, e.description()));
  }
  Reader rd(source);
  LocateRules out;
  for (const auto& [k, v] : doc) {
    const std::string key(k.str());
    if (key == "version") {
      if (!v.is_integer() || v.as_integer()->get() != 1) rd.error(v, "version: this kerncap reads version 1");
    } else if (key == "rule") {
      for (const auto& t : rd.tables(v, key)) out.rules.push_back(rd.rule(*t.as_table(), out.rules.size() + 1));
    } else if (key == "test") {
      for (const auto& t : rd.tables(v, key)) out.tests.push_back(rd.test(*t.as_table(), out.tests.size() + 1));
    } else if (key == "ops") {
      if (!v.is_table()) rd.error(v, "ops: expected a table of NAME = \"op\"");
      for (const auto& [name, op] : *v.as_table()) out.ops[std::string(name.str())] = rd.str(op, "ops");
    } else {
      rd.error(v, fmt::format("unknown key \"{}\" (known: version, rule, test, ops)", key));
    }
  }
  return out;
}

static std::string read_rules_file(const std::string& path) {
  // A name that does not lead to anything is the command line's mistake (Usage); a FIFO (it
  // would block), a device (/dev/zero reads forever), a directory or a huge file is refused as
  // input. Opened once, without blocking, checked on the open descriptor.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st))
    usage_error(fmt::format("--rules {}: cannot read it: {}", path, ec ? ec.message() : "no such file"));
  try {
    const format::ReadOnlyFile file = format::ReadOnlyFile::open(path);
    const std::vector<uint8_t> bytes = file.read_all(kMaxRulesFileBytes);
    return std::string(bytes.begin(), bytes.end());
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Input) throw;
    input_error(fmt::format("--rules {}: {}", path, e.what()));
  }
}

LocateRules load_locate_rules(const std::vector<std::string>& user_files) {
  LocateRules all = parse_locate_rules(builtin_rules_text(), "locate_rules.toml (built in)");
  for (auto f = user_files.rbegin(); f != user_files.rend(); ++f) {
    LocateRules user = parse_locate_rules(read_rules_file(*f), *f);
    user.rules.insert(user.rules.end(), all.rules.begin(), all.rules.end());
    user.tests.insert(user.tests.end(), all.tests.begin(), all.tests.end());
    for (auto& [k, v] : all.ops) user.ops.emplace(k, v);  // the user's entry stays
    all = std::move(user);
  }
  return all;
}

}  // namespace kerncap::source
