#include "source/lexer.hpp"

#include <cctype>

namespace kerncap::source {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

class Lexer {
 public:
  explicit Lexer(std::string_view t) : t_(t) {}

  std::vector<Token> run() {
    bool line_start = true;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
        line_start = true;
        continue;
      }
      if (std::isspace(static_cast<unsigned char>(c))) { ++i_; continue; }
      if (c == '\\' && i_ + 1 < t_.size() && t_[i_ + 1] == '\n') { i_ += 2; ++line_; continue; }
      if (skip_comment()) continue;
      if (c == '#' && line_start) { directive(); continue; }
      line_start = false;
      if (ident_start(c)) { ident_or_prefixed_literal(); continue; }
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && i_ + 1 < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_ + 1])))) {
        number();
        continue;
      }
      if (c == '"') { quoted(i_, '"', TokKind::String); continue; }
      if (c == '\'') { quoted(i_, '\'', TokKind::Char); continue; }
      punct();
    }
    return std::move(out_);
  }

 private:
  bool skip_comment() {
    if (t_[i_] != '/' || i_ + 1 >= t_.size()) return false;
    if (t_[i_ + 1] == '/') {
      while (i_ < t_.size() && t_[i_] != '\n') {
        if (t_[i_] == '\\' && i_ + 1 < t_.size() && t_[i_ + 1] == '\n') { ++line_; ++i_; }  // spliced comment
        ++i_;
      }
      return true;
    }
    if (t_[i_ + 1] == '*') {
      i_ += 2;
      while (i_ < t_.size() && !(t_[i_] == '*' && i_ + 1 < t_.size() && t_[i_ + 1] == '/')) {
        if (t_[i_] == '\n') ++line_;
        ++i_;
      }
      i_ = std::min(i_ + 2, t_.size());
      return true;
    }
    return false;
  }

  void emit(TokKind k, size_t from, uint32_t line) { out_.push_back({k, std::string(t_.substr(from, i_ - from)), line}); }

  // A directive runs to the end of the line (with continuations); comments inside are dropped.
  void directive() {
    const uint32_t line = line_;
    ++i_;
    std::string text;
    while (i_ < t_.size() && t_[i_] != '\n') {
      if (t_[i_] == '\\' && i_ + 1 < t_.size() && t_[i_ + 1] == '\n') { i_ += 2; ++line_; text += ' '; continue; }
      if (t_[i_] == '/' && i_ + 1 < t_.size() && (t_[i_ + 1] == '/' || t_[i_ + 1] == '*')) {
        const bool block = t_[i_ + 1] == '*';
        skip_comment();
        if (!block) break;
        text += ' ';
        continue;
      }
      if (t_[i_] == '"' || t_[i_] == '\'') {  // keep literals whole: "a//b.h" is not a comment
        const char q = t_[i_];
        const size_t from = i_++;
        while (i_ < t_.size() && t_[i_] != q && t_[i_] != '\n') i_ += t_[i_] == '\\' ? 2 : 1;
        if (i_ < t_.size() && t_[i_] == q) ++i_;
        text += t_.substr(from, i_ - from);
        continue;
      }
      text += t_[i_++];
    }
    size_t b = text.find_first_not_of(" \t\r");
    size_t e = text.find_last_not_of(" \t\r");
    out_.push_back({TokKind::Directive, b == std::string::npos ? "" : text.substr(b, e - b + 1), line});
  }

  void ident_or_prefixed_literal() {
    const size_t from = i_;
    const uint32_t line = line_;
    while (i_ < t_.size() && ident_char(t_[i_])) ++i_;
    const std::string_view id = t_.substr(from, i_ - from);
    if (i_ < t_.size() && t_[i_] == '"') {
      if (id == "R" || id == "u8R" || id == "uR" || id == "UR" || id == "LR") return raw_string(from, line);
      if (id == "u8" || id == "u" || id == "U" || id == "L") return quoted(from, '"', TokKind::String);
    }
    if (i_ < t_.size() && t_[i_] == '\'' && (id == "u8" || id == "u" || id == "U" || id == "L"))
      return quoted(from, '\'', TokKind::Char);
    emit(TokKind::Ident, from, line);
  }

  // pp-number: digits, letters, '.', digit separators ('), exponent signs.
  void number() {
    const size_t from = i_;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if ((c == '+' || c == '-') && i_ > from && std::string_view("eEpP").find(t_[i_ - 1]) != std::string_view::npos) {
        ++i_;
      } else if (ident_char(c) || c == '.') {
        ++i_;
      } else if (c == '\'' && i_ + 1 < t_.size() && ident_char(t_[i_ + 1])) {
        ++i_;
      } else {
        break;
      }
    }
    emit(TokKind::Number, from, line_);
  }

  // From `from` (the prefix, if any) through the closing quote; i_ is at or before the quote.
  void quoted(size_t from, char q, TokKind kind) {
    const uint32_t line = line_;
    while (t_[i_] != q) ++i_;
    ++i_;
    while (i_ < t_.size() && t_[i_] != q) {
      if (t_[i_] == '\\' && i_ + 1 < t_.size()) {
        if (t_[i_ + 1] == '\n') ++line_;
        i_ += 2;
        continue;
      }
      if (t_[i_] == '\n') break;  // unterminated: stop at the line end
      ++i_;
    }
    if (i_ < t_.size() && t_[i_] == q) ++i_;
    emit(kind, from, line);
  }

  void raw_string(size_t from, uint32_t line) {
    ++i_;  // the quote
    const size_t paren = t_.find('(', i_);
    if (paren == std::string_view::npos) { i_ = t_.size(); return emit(TokKind::String, from, line); }
    const std::string close = ")" + std::string(t_.substr(i_, paren - i_)) + "\"";
    const size_t end = t_.find(close, paren);
    const size_t stop = end == std::string_view::npos ? t_.size() : end + close.size();
    for (size_t k = i_; k < stop; ++k)
      if (t_[k] == '\n') ++line_;
    i_ = stop;
    emit(TokKind::String, from, line);
  }

  void punct() {
    const size_t from = i_;
    const std::string_view rest = t_.substr(i_);
    if (rest.starts_with("::") || rest.starts_with("->")) i_ += 2;
    else if (rest.starts_with("...")) i_ += 3;
    else ++i_;
    emit(TokKind::Punct, from, line_);
  }

  std::string_view t_;
  size_t i_ = 0;
  uint32_t line_ = 1;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> lex(std::string_view text) { return Lexer(text).run(); }

std::string string_contents(std::string_view lit) {
  const size_t q = lit.find('"');
  if (q == std::string_view::npos) return std::string(lit);
  const bool raw = q > 0 && lit[q - 1] == 'R';
  std::string_view body = lit.substr(q + 1);
  if (raw) {
    const size_t paren = body.find('(');
    if (paren == std::string_view::npos) return {};
    const std::string close = ")" + std::string(body.substr(0, paren)) + "\"";
    body = body.substr(paren + 1);
    const size_t end = body.rfind(close);
    return std::string(end == std::string_view::npos ? body : body.substr(0, end));
  }
  if (!body.empty() && body.back() == '"') body.remove_suffix(1);
  return std::string(body);
}

}  // namespace kerncap::source
