#pragma once
// Compile command lines: shell splitting/quoting and a small model of nvcc/clang/gcc
// arguments, enough to find include paths, outputs, architectures and the source file,
// and to rewrite a command without disturbing the flags kerncap does not know.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kerncap::source {

namespace fs = std::filesystem;

// POSIX-shell-like splitting: whitespace, '...', "..." with \" \\ \$ \`, backslash escapes.
std::vector<std::string> shell_split(std::string_view command);
// Quotes an argument for a POSIX shell only when it needs it.
std::string shell_quote(std::string_view arg);

// One argument as written: a bare word (a file or a flag without value) or an option with
// its value, written "-o x" (Separate), "-Ix" (Joined) or "--opt=x" (Equals).
struct Arg {
  enum class Form { Bare, Separate, Joined, Equals };
  Form form = Form::Bare;
  std::string opt;    // "-I", "--include-path", "-c", or the word itself for Bare
  std::string value;  // empty for Bare
  std::vector<std::string> words() const;  // back to argv words
  bool is(std::initializer_list<std::string_view> names) const;
};

// argv without the compiler (argv[0]). Unknown options stay Bare and keep their position.
std::vector<Arg> parse_args(const std::vector<std::string>& argv);

// Include search paths a command sets up, absolute (relative ones resolved against `dir`).
struct SearchPaths {
  std::vector<fs::path> quote;   // -iquote
  std::vector<fs::path> angle;   // -I, --include-path
  std::vector<fs::path> system;  // -isystem, --system-include, -idirafter
  std::vector<fs::path> forced;  // -include, --pre-include
};
SearchPaths search_paths(const std::vector<Arg>& args, const fs::path& dir);

// Names the option sets of `parse_args` recognise; used by the rewriter too.
bool is_include_dir_option(const Arg& a);   // -I -isystem -iquote -idirafter and long forms
bool is_force_include_option(const Arg& a); // -include --pre-include

// The compiler family of argv[0] ("/usr/local/cuda/bin/nvcc" -> Nvcc).
enum class Compiler { Nvcc, Clang, Other };
Compiler compiler_of(std::string_view argv0);
// Build wrappers that only prefix the real command (ccache, sccache, distcc).
bool is_launcher(std::string_view argv0);

fs::path absolute_in(const fs::path& p, const fs::path& dir);  // p if absolute, else dir / p, normalised

}  // namespace kerncap::source
