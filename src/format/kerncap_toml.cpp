// kerncap.toml through toml++ (header-only here, so the CLI carries no extra shared library).
// Strict: unknown sections and keys are refused, so a typo does not silently turn a check off.
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include "common/private_files.hpp"
#include "format/kerncap_toml.hpp"

#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "format/safe_file.hpp"

namespace kerncap::format {

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxPatternBytes = 1024;

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void error(const toml::node& at, std::string_view where, std::string_view what) const {
    input_error(fmt::format("{}:{}: {}: {}", source_, at.source().begin.line, where, what));
  }

  const toml::table& table(const toml::node& n, std::string_view where) const {
    if (!n.is_table()) error(n, where, fmt::format("expected a table, found {}", type_name(n)));
    return *n.as_table();
  }
  bool boolean(const toml::node& n, std::string_view where) const {
    if (!n.is_boolean()) error(n, where, fmt::format("expected true or false, found {}", type_name(n)));
    return n.as_boolean()->get();
  }
  int64_t count(const toml::node& n, std::string_view where) const {
    if (!n.is_integer()) error(n, where, fmt::format("expected an integer, found {}", type_name(n)));
    const int64_t v = n.as_integer()->get();
    if (v < 0) error(n, where, fmt::format("expected an integer >= 0, found {}", v));
    return v;
  }
  double number(const toml::node& n, std::string_view where) const {
    double v = 0;
    if (n.is_integer()) v = static_cast<double>(n.as_integer()->get());
    else if (n.is_floating_point()) v = n.as_floating_point()->get();
    else error(n, where, fmt::format("expected a number, found {}", type_name(n)));
    if (!(v >= 0) || v == std::numeric_limits<double>::infinity())
      error(n, where, fmt::format("expected a finite number >= 0, found {}", v));
    return v;
  }
  std::vector<std::string> patterns(const toml::node& n, std::string_view where) const {
    if (!n.is_array()) error(n, where, fmt::format("expected an array of regular expressions, found {}", type_name(n)));
    std::vector<std::string> out;
    for (const toml::node& e : *n.as_array()) {
      if (!e.is_string()) error(e, where, fmt::format("expected a string (a regular expression), found {}", type_name(e)));
      std::string re = e.as_string()->get();
      // libstdc++ compiles a regex by recursive descent, a few frames per character and per
      // group: a long pattern (kerncap.toml is shared input) overflowed the stack (found by
      // the fuzzer). A pattern matches one instruction line; none needs more than this.
      if (re.size() > kMaxPatternBytes)
        error(e, where, fmt::format("a regular expression of {} bytes; at most {} are accepted", re.size(),
                                    kMaxPatternBytes));
      try {
        std::regex check(re, std::regex::ECMAScript);
      } catch (const std::regex_error& ex) {
        error(e, where, fmt::format("bad regular expression \"{}\": {}", re, ex.what()));
      }
      out.push_back(std::move(re));
    }
    return out;
  }
  [[noreturn]] void unknown(const toml::node& n, std::string_view where, std::string_view key,
                            std::string_view known) const {
    error(n, where, fmt::format("unknown key \"{}\" (known: {})", key, known));
  }

  static std::string_view type_name(const toml::node& n) {
    switch (n.type()) {
      case toml::node_type::table: return "a table";
      case toml::node_type::array: return "an array";
      case toml::node_type::string: return "a string";
      case toml::node_type::integer: return "an integer";
      case toml::node_type::floating_point: return "a number";
      case toml::node_type::boolean: return "a boolean";
      default: return "a date or time";
    }
  }

 private:
  std::string source_;
};

void read_tolerances(const Reader& r, const toml::table& t, KerncapConfig& c) {
  for (const auto& [key, node] : t) {
    const std::string name(key.str());
    const std::string where = fmt::format("[tolerances] {}", name);
    const std::optional<compare::DType> dt = compare::dtype_from_string(name);
    if (!dt) r.error(node, where, "unknown dtype (use fp64, fp32, fp16, bf16, fp8e4m3, fp8e5m2, i8..i64, u8..u64, bytes)");
    compare::Tolerance tol = compare::default_tolerance(*dt);
    for (const auto& [k, v] : r.table(node, where)) {
      const std::string_view kk = k.str();
      if (kk == "atol") tol.atol = r.number(v, where + ".atol");
      else if (kk == "rtol") tol.rtol = r.number(v, where + ".rtol");
      else r.unknown(v, where, kk, "atol, rtol");
    }
    if (!c.tolerances.emplace(*dt, tol).second)
      r.error(node, where, fmt::format("a second entry for {}", compare::to_string(*dt)));
  }
}

void read_invariants(const Reader& r, const toml::table& t, Invariants& inv) {
  for (const auto& [key, node] : t) {
    const std::string_view k = key.str();
    const std::string where = fmt::format("[invariants] {}", k);
    if (k == "no_nan") inv.no_nan = r.boolean(node, where);
    else if (k == "no_inf") inv.no_inf = r.boolean(node, where);
    else if (k == "non_negative") inv.non_negative = r.boolean(node, where);
    else if (k == "must_write") inv.must_write = r.boolean(node, where);
    else r.unknown(node, "[invariants]", k, "no_nan, no_inf, non_negative, must_write");
  }
}

void read_artifact_checks(const Reader& r, const toml::table& t, ArtifactChecks& a) {
  for (const auto& [key, node] : t) {
    const std::string_view k = key.str();
    const std::string where = fmt::format("[artifact_checks] {}", k);
    if (k == "max_registers") a.max_registers = r.count(node, where);
    else if (k == "max_spills") a.max_spills = r.count(node, where);
    else if (k == "max_local_memory") a.max_local_memory = r.count(node, where);
    else if (k == "required_patterns") a.required_patterns = r.patterns(node, where);
    else if (k == "forbidden_patterns") a.forbidden_patterns = r.patterns(node, where);
    else
      r.unknown(node, "[artifact_checks]", k,
                "max_registers, max_spills, max_local_memory, required_patterns, forbidden_patterns");
  }
}

void read_timing(const Reader& r, const toml::table& t, Timing& tm) {
  for (const auto& [key, node] : t) {
    const std::string_view k = key.str();
    if (k != "min_speedup") r.unknown(node, "[timing]", k, "min_speedup");
    tm.min_speedup = r.number(node, "[timing] min_speedup");
    if (*tm.min_speedup <= 0) r.error(node, "[timing] min_speedup", "expected a number > 0");
  }
}

}  // namespace

KerncapConfig parse_kerncap_toml(std::string_view text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    input_error(fmt::format("{}:{}:{}: not valid TOML: {}", source, e.source().begin.line, e.source().begin.column,
                            e.description()));
  }
  const Reader r(source);
  KerncapConfig c;
  for (const auto& [key, node] : root) {
    const std::string_view k = key.str();
    const std::string where = fmt::format("[{}]", k);
    if (k == "tolerances") read_tolerances(r, r.table(node, where), c);
    else if (k == "invariants") read_invariants(r, r.table(node, where), c.invariants);
    else if (k == "artifact_checks") read_artifact_checks(r, r.table(node, where), c.artifact_checks);
    else if (k == "timing") read_timing(r, r.table(node, where), c.timing);
    else r.error(node, where, "unknown section (known: tolerances, invariants, artifact_checks, timing)");
  }
  return c;
}

std::optional<KerncapConfig> load_kerncap_toml(const fs::path& out_dir) {
  fs::path dir = out_dir;
  if (dir.filename() == format::kCaptureDirName) dir = dir.parent_path();
  const fs::path p = dir / kKerncapTomlName;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(p, ec))) return std::nullopt;
  // Untrusted input (reproducers are shared), and every evaluation of the judge reads it: a
  // regular file inside OUT only (no link followed out of it, no FIFO to block on, no device
  // to read forever, no directory silently taken for "no rules"), and bounded.
  const format::ReadOnlyFile f = format::ReadOnlyFile::open_in(dir, std::string(kKerncapTomlName), "kerncap.toml");
  const std::vector<uint8_t> bytes = f.read_all(kMaxKerncapTomlBytes);
  return parse_kerncap_toml(std::string(bytes.begin(), bytes.end()), p.string());
}

std::string default_kerncap_toml() {
  std::string s =
      "# kerncap.toml: rules for this reproducer, read by `kerncap lint` and `kerncap validate`.\n"
      "# Command-line flags override what is set here. Unknown keys are refused. See docs/lint.md.\n"
      "\n"
      "# Per-dtype tolerance of the comparison with what the application wrote:\n"
      "# |replay - expected| <= atol + rtol * |expected| (integers compare exactly).\n"
      "[tolerances]\n";
  for (const compare::DType t : {compare::DType::F64, compare::DType::F32, compare::DType::F16, compare::DType::BF16}) {
    const compare::Tolerance tol = compare::default_tolerance(t);
    s += fmt::format("{} = {{ atol = {}, rtol = {} }}\n", compare::to_string(t), tol.atol, tol.rtol);
  }
  s +=
      "\n"
      "# Properties of the bytes the launch wrote, read as their element types, whatever the\n"
      "# expected values (kerncap validate; --invariant/--no-invariants override).\n"
      "[invariants]\n"
      "no_nan = false        # no NaN in a written floating-point region\n"
      "no_inf = false        # no +-Inf\n"
      "non_negative = false  # no value below zero (floats, signed integers)\n"
      "must_write = false    # the replay changes every region the application's launch changed\n"
      "\n"
      "# Checks of the compiled code (kerncap lint). Regular expressions are ECMAScript and\n"
      "# match one SASS (or PTX) instruction line, e.g. \"HGMMA\" or \"LDG\\\\.E\\\\.128\".\n"
      "[artifact_checks]\n"
      "max_registers = 255\n"
      "# max_spills = 0        # STL + LDL instructions (local arrays count too)\n"
      "# max_local_memory = 0  # bytes of stack per thread\n"
      "required_patterns = []\n"
      "forbidden_patterns = []\n"
      "\n"
      "[timing]\n"
      "# min_speedup = 1.0  # validate --cubin V: the variant must be at least this much faster\n";
  return s;
}

bool write_default_kerncap_toml(const fs::path& out_dir) {
  fs::path dir = out_dir;
  if (dir.filename() == format::kCaptureDirName) dir = dir.parent_path();
  const fs::path p = dir / kKerncapTomlName;
  std::error_code ec;
  if (fs::exists(p, ec)) return false;
  const std::string text = default_kerncap_toml();
  files::write_new_file(p, text);
  return true;
}

}  // namespace kerncap::format
