#pragma once
// Filling the embedded templates and quoting for Makefiles.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kerncap::reproducer {

// Replaces every @NAME@ (NAME: capitals, digits, '_') with vars[NAME], in one pass (values
// are not rescanned). Throws Error(Internal) naming a placeholder without a value.
std::string render(std::string_view tmpl, const std::map<std::string, std::string>& vars);

// One shell word inside a Makefile: shell-quoted, '$' doubled; in a variable assignment
// ('in_variable') '#' is escaped too (it would start a comment).
std::string make_word(std::string_view arg, bool in_variable);
std::string make_words(const std::vector<std::string>& args, bool in_variable);

// Recipe lines that print `text` (one `@echo '...'` per line, tab-indented).
std::string make_echo_lines(std::string_view text);

}  // namespace kerncap::reproducer
