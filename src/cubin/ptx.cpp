// parse_ptx: what PTX text says about its kernels without compiling it: `.entry` names,
// the parameter layout (each .param placed at the next multiple of its alignment, as the
// driver lays out the parameter bank), launch-bound directives, module-scope .global /
// .const variables and the .target sm. Registers, shared and local sizes are only known
// after ptxas, so they stay -1.
#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "common/error.hpp"
#include "cubin/cubin.hpp"

namespace kerncap::cubin {

namespace {

// Comments become spaces so token positions stay meaningful and `a/**/b` stays two tokens.
std::string strip_comments(std::string_view in) {
  std::string out(in);
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] == '"') {  // .file "name//with/slashes"
      while (++i < out.size() && out[i] != '"' && out[i] != '\n') {}
      continue;
    }
    if (out[i] == '/' && out[i + 1] == '/') {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out[i] == '/' && out[i + 1] == '*') {
      size_t j = i;
      while (j < out.size() && !(out[j] == '*' && j + 1 < out.size() && out[j + 1] == '/')) out[j++] = ' ';
      for (size_t k = j; k < std::min(j + 2, out.size()); ++k) out[k] = ' ';
      i = j;
    }
  }
  return out;
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}

std::vector<std::string_view> tokenize(std::string_view s) {
  std::vector<std::string_view> t;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '"') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != '"' && s[j] != '\n') ++j;
      t.push_back(s.substr(i, std::min(j + 1, s.size()) - i));
      i = j + 1;
    } else if (word_char(c)) {
      size_t j = i;
      while (j < s.size() && word_char(s[j])) ++j;
      t.push_back(s.substr(i, j - i));
      i = j;
    } else {
      t.push_back(s.substr(i, 1));
      ++i;
    }
  }
  return t;
}

// Bytes of a PTX fundamental type; 0 when the token is not one.
uint32_t type_size(std::string_view t) {
  if (t == ".b8" || t == ".u8" || t == ".s8" || t == ".pred") return 1;
  if (t == ".b16" || t == ".u16" || t == ".s16" || t == ".f16" || t == ".bf16") return 2;
  if (t == ".b32" || t == ".u32" || t == ".s32" || t == ".f32" || t == ".f16x2" || t == ".bf16x2") return 4;
  if (t == ".b64" || t == ".u64" || t == ".s64" || t == ".f64") return 8;
  if (t == ".texref" || t == ".samplerref" || t == ".surfref") return 8;
  if (t == ".b128") return 16;
  return 0;
}

std::optional<uint64_t> number(std::string_view t) {
  if (t.empty() || t.size() > 12 || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  uint64_t v = 0;
  for (char c : t) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v;
}

class Parser {
 public:
  explicit Parser(std::vector<std::string_view> toks) : t_(std::move(toks)) {}

  Image run() {
    Image img;
    img.kind = img.code_kind = ImageKind::Ptx;
    int depth = 0;
    bool ext = false;  // .extern applies to the next declaration only
    while (i_ < t_.size()) {
      const std::string_view tok = t_[i_++];
      if (tok == "{") ++depth;
      else if (tok == "}") depth = std::max(0, depth - 1);
      else if (depth > 0) continue;
      else if (tok == ";") ext = false;
      else if (tok == ".extern") ext = true;
      else if (tok == ".target") target(img);
      else if (tok == ".entry") img.kernels.push_back(entry());
      else if ((tok == ".global" || tok == ".const") && !ext) variable(img, tok == ".const");
    }
    return img;
  }

 private:
  std::string_view peek() const { return i_ < t_.size() ? t_[i_] : std::string_view{}; }
  std::string_view next() { return i_ < t_.size() ? t_[i_++] : std::string_view{}; }

  [[noreturn]] void bad(std::string_view what) const {
    input_error(fmt::format("PTX: {} near token {} of {}; the PTX is malformed or truncated", what, i_, t_.size()));
  }

  void target(Image& img) {
    const std::string_view t = next();  // sm_90, sm_90a, sm_100f
    if (!t.starts_with("sm_")) return;
    int sm = 0;
    for (char c : t.substr(3)) {
      if (c < '0' || c > '9') break;
      sm = sm * 10 + (c - '0');
      if (sm > 10000) break;
    }
    img.sm = sm;
  }

  // `.param [.ptr [.space] [.align N]] [.align N] .type name[[N]]` up to ',' or ')'.
  // Returns {size, alignment, name}.
  struct Decl {
    uint64_t size = 0;
    uint64_t align = 1;
    std::string_view name;
    bool managed = false;  // .attribute(.managed)
  };
  Decl declaration(std::initializer_list<std::string_view> ends) {
    Decl d;
    uint64_t elem = 0, vec = 1, count = 1, explicit_align = 0;
    auto at_end = [&] {
      const auto p = peek();
      return p.empty() || std::find(ends.begin(), ends.end(), p) != ends.end();
    };
    while (!at_end()) {
      const std::string_view tok = next();
      if (tok == ".align") {
        const auto n = number(next());
        if (!n || *n == 0) bad(".align without a number");
        explicit_align = *n;
      } else if (tok == ".v2" || tok == ".v4" || tok == ".v8") {
        vec = static_cast<uint64_t>(tok[2] - '0');
      } else if (const uint32_t s = type_size(tok)) {
        elem = s;
      } else if (tok == "[") {
        const auto n = number(next());
        if (next() != "]") bad("array dimension without ']'");
        count *= n.value_or(0);  // `[]` has no size
        if (count > (uint64_t{1} << 32)) bad("array too large");
      } else if (tok == ".managed") {
        d.managed = true;
      } else if (!tok.empty() && tok[0] != '.' && word_char(tok[0]) && d.name.empty()) {
        d.name = tok;
      }
    }
    if (elem == 0) bad(fmt::format("declaration of {} has no type", d.name));
    d.size = elem * vec * count;
    d.align = explicit_align ? explicit_align : elem * vec;
    return d;
  }

  KernelInfo entry() {
    KernelInfo k;
    k.name = next();
    if (k.name.empty() || !word_char(k.name[0])) bad(".entry without a name");
    if (peek() == "(") {
      ++i_;
      uint64_t offset = 0;
      for (uint32_t ordinal = 0; peek() != ")"; ++ordinal) {
        if (next() != ".param") bad(fmt::format("parameter list of {}", k.name));
        const Decl d = declaration({",", ")"});
        offset = (offset + d.align - 1) / d.align * d.align;
        if (offset + d.size > UINT32_MAX) bad("parameters too large");
        k.params.push_back({ordinal, static_cast<uint32_t>(offset), static_cast<uint32_t>(d.size)});
        offset += d.size;
        if (peek() == ",") ++i_;
      }
      ++i_;
      k.param_bytes = static_cast<uint32_t>(offset);
    }
    // Performance directives sit between the parameter list and the body.
    while (i_ < t_.size() && peek() != "{" && peek() != ";") {
      const std::string_view d = next();
      if (d == ".maxntid" || d == ".reqntid" || d == ".reqnctapercluster") {
        std::array<uint32_t, 3> v{1, 1, 1};
        for (size_t n = 0; n < 3; ++n) {
          const auto x = number(peek());
          if (!x) break;
          v[n] = static_cast<uint32_t>(std::min<uint64_t>(*x, UINT32_MAX));
          ++i_;
          if (peek() == ",") ++i_;
        }
        if (d == ".reqnctapercluster") {
          k.cluster_dims = v;
        } else if (d == ".maxntid" || k.max_threads < 0) {
          k.max_threads = static_cast<int>(std::min<uint64_t>(uint64_t{v[0]} * v[1] * v[2], INT32_MAX));
        }
      }
    }
    return k;
  }

  void variable(Image& img, bool constant) {
    const Decl d = declaration({";", "="});
    if (d.name.empty() || d.size == 0) return;  // `[]`: storage defined elsewhere
    GlobalVar g;
    g.name = d.name;
    g.size = d.size;
    g.constant = constant;
    g.managed = d.managed;
    g.section = constant ? ".const" : ".global";
    img.globals.push_back(std::move(g));
  }

  std::vector<std::string_view> t_;
  size_t i_ = 0;
};

}  // namespace

Image parse_ptx(std::span<const uint8_t> ptx) {
  std::string_view text(reinterpret_cast<const char*>(ptx.data()), ptx.size());
  text = text.substr(0, text.find('\0'));  // fatbin payloads are NUL padded
  const std::string clean = strip_comments(text);
  return Parser(tokenize(clean)).run();
}

}  // namespace kerncap::cubin
