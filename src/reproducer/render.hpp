#pragma once
// Filling the embedded templates, and quoting every value that comes from a capture (kernel
// names, file names, the command line, the device name): a capture may be crafted, and a
// newline or `$(...)` in a name must reach the Makefile, README or compile command as text,
// never as code.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kerncap::reproducer {

// Replaces every @NAME@ (NAME: capitals, digits, '_') with vars[NAME], in one pass (values
// are not rescanned). Throws Error(Internal) naming a placeholder without a value.
std::string render(std::string_view tmpl, const std::map<std::string, std::string>& vars);

// One line of display text: control characters (newline, CR, NUL, ESC...) shown as \n,
// \r, \xNN, so the text cannot start a new line wherever it is written.
std::string one_line(std::string_view text);

// A Makefile comment's text: one_line, and never ending in a backslash (which would make
// the next line a comment too).
std::string make_comment(std::string_view text);

// One shell word inside a Makefile: shell-quoted, '$' doubled; in a variable assignment
// ('in_variable') '#' is escaped too (it would start a comment). A word with a control
// character cannot be written into a Makefile faithfully: Error(Input).
std::string make_word(std::string_view arg, bool in_variable);
std::string make_words(const std::vector<std::string>& args, bool in_variable);

// Recipe lines that print `text` (one `@echo '...'` per line, tab-indented; other control
// characters escaped as in one_line).
std::string make_echo_lines(std::string_view text);

// Markdown: an inline code span holding `text` on one line (delimited by more backticks
// than it contains; '|' escaped so it cannot end a table cell).
std::string md_code(std::string_view text);
// Markdown: plain text on one line, with the characters that format or link escaped.
std::string md_text(std::string_view text);

}  // namespace kerncap::reproducer
