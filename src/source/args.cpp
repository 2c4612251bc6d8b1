#include "source/args.hpp"

#include <algorithm>
#include <set>

#include "common/error.hpp"

namespace kerncap::source {
namespace {

// Options whose value may be the next word. Single-dash short ones may also be joined
// (-Ifoo); long ones may use '=' (--include-path=foo). nvcc's own short spellings
// (-arch, -ccbin, -rdc, ...) also accept '='.
const std::set<std::string, std::less<>>& separate_value_options() {
  static const std::set<std::string, std::less<>> s = {
      "-o", "-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-MF", "-MT", "-MQ", "-MJ", "-x", "-D",
      "-U", "-L", "-l", "-arch", "-code", "-gencode", "-ccbin", "-Xcompiler", "-Xptxas", "-Xlinker", "-Xnvlink",
      "-Xfatbin", "-Xarchive", "-Xclang", "-Xarch_device", "-Xcuda-ptxas", "-Xcuda-fatbinary", "-maxrregcount",
      "-rdc", "-odir", "-optf", "-t", "-m", "-target", "-split-compile", "-diag-suppress", "-diag-error",
      "-diag-warn", "-default-stream", "-keep-dir", "-ftemplate-depth", "-std",
      "--output-file", "--include-path", "--system-include", "--pre-include", "--compiler-bindir",
      "--gpu-architecture", "--gpu-code", "--generate-code", "--relocatable-device-code", "--options-file",
      "--dependency-output", "--dependency-target-name", "--keep-dir", "--threads", "--compiler-options",
      "--ptxas-options", "--linker-options", "--nvlink-options", "--machine", "--default-stream", "--maxrregcount",
      "--define-macro", "--undefine-macro", "--library-path", "--library", "--output-directory", "--x",
      "--split-compile", "--diag-suppress", "--diag-error", "--diag-warn", "--std", "--cuda-path",
  };
  return s;
}

// Short options that take a joined value ("-Ifoo", "-DX=1", "-ofoo.o").
const std::vector<std::string_view>& joinable() {
  // Not -l/-L: nvcc has -lineinfo, -lib, -lto, -ldir (and library flags do not matter here).
  static const std::vector<std::string_view> v = {"-I", "-D", "-U", "-o", "-MF", "-MT", "-MQ", "-x"};
  return v;
}

}  // namespace

std::vector<std::string> shell_split(std::string_view c) {
  std::vector<std::string> out;
  std::string cur;
  bool have = false;
  for (size_t i = 0; i < c.size(); ++i) {
    const char ch = c[i];
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      if (have) out.push_back(std::move(cur));
      cur.clear();
      have = false;
    } else if (ch == '\'') {
      const size_t end = c.find('\'', i + 1);
      if (end == std::string_view::npos) input_error("compile command has an unterminated ' quote: " + std::string(c));
      cur.append(c.substr(i + 1, end - i - 1));
      i = end;
      have = true;
    } else if (ch == '"') {
      size_t j = i + 1;
      for (; j < c.size() && c[j] != '"'; ++j) {
        if (c[j] == '\\' && j + 1 < c.size() && std::string_view("\"\\$`\n").find(c[j + 1]) != std::string_view::npos)
          ++j;
        cur += c[j];
      }
      if (j >= c.size()) input_error("compile command has an unterminated \" quote: " + std::string(c));
      i = j;
      have = true;
    } else if (ch == '\\' && i + 1 < c.size()) {
      cur += c[++i];
      have = true;
    } else {
      cur += ch;
      have = true;
    }
  }
  if (have) out.push_back(std::move(cur));
  return out;
}

std::string shell_quote(std::string_view a) {
  if (!a.empty() && a.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=/.,:%@") ==
                        std::string_view::npos)
    return std::string(a);
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> Arg::words() const {
  switch (form) {
    case Form::Bare: return {opt};
    case Form::Separate: return {opt, value};
    case Form::Joined: return {opt + value};
    case Form::Equals: return {opt + "=" + value};
  }
  return {opt};
}

bool Arg::is(std::initializer_list<std::string_view> names) const {
  return std::find(names.begin(), names.end(), opt) != names.end();
}

std::vector<Arg> parse_args(const std::vector<std::string>& argv) {
  std::vector<Arg> out;
  const auto& sep = separate_value_options();
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (w.size() < 2 || w[0] != '-') {
      out.push_back({Arg::Form::Bare, w, ""});
      continue;
    }
    if (sep.count(w)) {
      if (i + 1 < argv.size()) out.push_back({Arg::Form::Separate, w, argv[++i]});
      else out.push_back({Arg::Form::Bare, w, ""});
      continue;
    }
    if (const size_t eq = w.find('='); eq != std::string::npos && sep.count(std::string_view(w).substr(0, eq))) {
      out.push_back({Arg::Form::Equals, w.substr(0, eq), w.substr(eq + 1)});
      continue;
    }
    bool joined = false;
    for (std::string_view j : joinable()) {
      // -MF before -M..., -I before -isystem: -isystem/-include/-iquote are in `sep` and
      // matched above when separate; joined -isystemfoo is not supported (nobody writes it).
      if (w.starts_with(j) && w.size() > j.size() && !(j == "-I" && w.starts_with("-i"))) {
        out.push_back({Arg::Form::Joined, std::string(j), w.substr(j.size())});
        joined = true;
        break;
      }
    }
    if (!joined) out.push_back({Arg::Form::Bare, w, ""});
  }
  return out;
}

bool is_include_dir_option(const Arg& a) {
  return a.form != Arg::Form::Bare &&
         a.is({"-I", "--include-path", "-isystem", "--system-include", "-iquote", "-idirafter"});
}

bool is_force_include_option(const Arg& a) {
  return a.form != Arg::Form::Bare && a.is({"-include", "--pre-include"});
}

fs::path absolute_in(const fs::path& p, const fs::path& dir) {
  return (p.is_absolute() ? p : dir / p).lexically_normal();
}

SearchPaths search_paths(const std::vector<Arg>& args, const fs::path& dir) {
  SearchPaths sp;
  for (const Arg& a : args) {
    if (a.form == Arg::Form::Bare) continue;
    const fs::path p = absolute_in(a.value, dir);
    if (a.is({"-I", "--include-path"})) sp.angle.push_back(p);
    else if (a.is({"-iquote"})) sp.quote.push_back(p);
    else if (a.is({"-isystem", "--system-include", "-idirafter"})) sp.system.push_back(p);
    else if (is_force_include_option(a)) sp.forced.push_back(p);
  }
  return sp;
}

Compiler compiler_of(std::string_view argv0) {
  const std::string name = fs::path(argv0).filename().string();
  if (name == "nvcc" || name.starts_with("nvcc")) return Compiler::Nvcc;
  if (name.find("clang") != std::string::npos) return Compiler::Clang;
  return Compiler::Other;
}

bool is_launcher(std::string_view argv0) {
  const std::string name = fs::path(argv0).filename().string();
  return name == "ccache" || name == "sccache" || name == "distcc" || name == "buildcache";
}

}  // namespace kerncap::source
