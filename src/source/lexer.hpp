#pragma once
// Just enough of a C++ lexer to find kernel definitions and #include lines: comments are
// dropped, string and character literals become single tokens (so a `__global__` inside
// an NVRTC source string is never taken for a definition), preprocessor lines become one
// Directive token each. No macro expansion and no conditional compilation: every branch
// of an #if is seen, which over-approximates (the finder disambiguates later).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kerncap::source {

enum class TokKind { Ident, Number, String, Char, Punct, Directive };

struct Token {
  TokKind kind = TokKind::Punct;
  std::string text;  // Punct: "{", "::", "->", "..."; String: the literal as written; Directive: the line after '#'
  uint32_t line = 0; // 1-based
};

std::vector<Token> lex(std::string_view text);

// For a String token: its contents without prefix and quotes (raw strings included).
std::string string_contents(std::string_view literal);

}  // namespace kerncap::source
