#include "reproducer/render.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/error.hpp"
#include "source/args.hpp"

namespace kerncap::reproducer {

std::string render(std::string_view t, const std::map<std::string, std::string>& vars) {
  std::string out;
  out.reserve(t.size());
  size_t i = 0;
  while (i < t.size()) {
    if (t[i] == '@') {
      size_t j = i + 1;
      while (j < t.size() && (std::isupper(static_cast<unsigned char>(t[j])) || std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == '_'))
        ++j;
      if (j > i + 1 && j < t.size() && t[j] == '@' && std::isupper(static_cast<unsigned char>(t[i + 1]))) {
        const std::string name(t.substr(i + 1, j - i - 1));
        auto it = vars.find(name);
        if (it == vars.end()) fail(ErrorKind::Internal, fmt::format("reproducer template: no value for @{}@", name));
        out += it->second;
        i = j + 1;
        continue;
      }
    }
    out += t[i++];
  }
  return out;
}

namespace {

bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

}  // namespace

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (!is_control(c)) out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }
  return out;
}

std::string make_comment(std::string_view text) {
  std::string out = one_line(text);
  if (!out.empty() && out.back() == '\\') out += ' ';
  return out;
}

std::string make_word(std::string_view arg, bool in_variable) {
  if (std::any_of(arg.begin(), arg.end(), is_control))
    input_error(fmt::format("cannot write \"{}\" into the reproducer's Makefile: it holds a control character "
                            "(a damaged or crafted capture or compile command?)",
                            one_line(arg)));
  // In an assignment GNU make reads "\\#" as a backslash and a comment: no escape for that.
  if (in_variable && arg.find("\\#") != std::string_view::npos)
    input_error(fmt::format("cannot write \"{}\" into the reproducer's Makefile: a backslash before '#' cannot "
                            "be quoted there",
                            arg));
  std::string q = source::shell_quote(arg), out;
  for (char c : q) {
    if (c == '$') out += "$$";
    else if (c == '#' && in_variable) out += "\\#";
    else out += c;
  }
  return out;
}

std::string make_words(const std::vector<std::string>& args, bool in_variable) {
  std::string s;
  for (const auto& a : args) {
    if (!s.empty()) s += ' ';
    s += make_word(a, in_variable);
  }
  return s;
}

std::string make_echo_lines(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string line = one_line(text.substr(start, nl - start));
    out += "\t@echo " + make_word(line.empty() ? std::string(" ") : line, false) + "\n";
    start = nl + 1;
  }
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace kerncap::reproducer

namespace kerncap::reproducer {

std::string md_code(std::string_view text) {
  std::string body;
  size_t run = 0, longest = 0;
  for (char c : one_line(text)) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '|') body += "\\|";
    else body += c;
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

std::string md_text(std::string_view text) {
  std::string out;
  for (char c : one_line(text)) {
    if (std::string_view("\\`*_{}[]<>()#+-!|~").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace kerncap::reproducer
