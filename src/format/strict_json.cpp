#include "format/strict_json.hpp"

#include <cmath>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"

namespace kerncap::format {
namespace {

// The first pass over a document: nesting depth and duplicated keys, checked as the parser
// reads, before any tree is built. A SAX handler rather than nlohmann's parser callback: the
// callback parser scans the whole enclosing array after every object it ends (to drop
// discarded values), so an array of 100,000 objects took minutes (issue 38: after.runs and
// params.slots hung `validate`). This pass is linear, and the tree is then built without a
// callback.
class Checker : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    if (!enter()) return false;
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!keys_.back().insert(k).second) {
      problem_ = fmt::format("the key \"{}\" appears twice in one object (ambiguous: refused)", k.substr(0, 80));
      return false;
    }
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    problem_ = fmt::format("not valid JSON ({})", e.what());
    return false;
  }
  const std::string& problem() const { return problem_; }

 private:
  // depth_ counts the containers around the one that starts.
  bool enter() {
    if (depth_++ < kMaxJsonDepth) return true;
    problem_ = fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth);
    return false;
  }
  std::vector<std::unordered_set<std::string>> keys_;  // of each object being read
  int depth_ = 0;                                      // the open containers
  std::string problem_;
};

}  // namespace

void JsonDoc::fail(const std::string& what) const {
  input_error(advice.empty() ? fmt::format("{}: {}", name, what) : fmt::format("{}: {}; {}", name, what, advice));
}

const char* json_type_name(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a fractional number";
    default: return "binary data";
  }
}

nlohmann::json parse_bounded_json(std::string_view text, const JsonDoc& doc) {
  if (text.size() > kMaxJsonBytes)
    doc.fail(fmt::format("{} bytes, more than the {} a document of this kind may have", text.size(), kMaxJsonBytes));
  // A raw NUL is never valid JSON (a string must escape it), but nlohmann's reader takes it
  // for the end of the input and would ignore whatever follows it: two readers could read two
  // documents from one file (issue 38: bytes after a NUL at the end of a manifest).
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    doc.fail(fmt::format("holds a NUL byte at offset {} of {} (not JSON; what follows it would be ignored)", nul,
                         text.size()));
  Checker checker;
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(text, &checker, nlohmann::json::input_format_t::json, /*strict=*/true);
  } catch (const nlohmann::json::exception& e) {
    doc.fail(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!ok) doc.fail(checker.problem().empty() ? std::string("not valid JSON") : checker.problem());
  try {
    return nlohmann::json::parse(text);  // checked above: bounded, no key twice
  } catch (const nlohmann::json::exception& e) {
    doc.fail(fmt::format("not valid JSON ({})", e.what()));
  }
}

void JsonField::fail(const std::string& what) const {
  doc_->fail(fmt::format("field '{}' {}", path_.empty() ? "(top level)" : path_, what));
}

void JsonField::wrong_type(const char* expected) const {
  fail(fmt::format("has the wrong type: expected {}, found {}", expected, json_type_name(*j_)));
}

void JsonField::object() const {
  if (!j_->is_object()) wrong_type("an object");
}

JsonField JsonField::at(const char* key) const {
  object();
  const std::string p = path_.empty() ? key : path_ + "." + key;
  const auto it = j_->find(key);
  if (it == j_->end()) doc_->fail(fmt::format("missing '{}': the file is incomplete or damaged", p));
  return JsonField(*it, *doc_, p);
}

std::optional<JsonField> JsonField::find(const char* key) const {
  object();
  const auto it = j_->find(key);
  if (it == j_->end()) return std::nullopt;
  return JsonField(*it, *doc_, path_.empty() ? key : path_ + "." + key);
}

size_t JsonField::array_size(size_t max) const {
  if (!j_->is_array()) wrong_type("an array");
  if (j_->size() > max) fail(fmt::format("has {} elements, at most {} are allowed", j_->size(), max));
  return j_->size();
}

JsonField JsonField::elem(size_t i) const {
  if (i >= array_size()) fail(fmt::format("has no element {}", i));
  return JsonField((*j_)[i], *doc_, fmt::format("{}[{}]", path_, i));
}

uint64_t JsonField::u64(uint64_t lo, uint64_t hi) const {
  uint64_t v = 0;
  if (j_->is_number_unsigned()) {
    v = j_->get<uint64_t>();
  } else if (j_->is_number_integer()) {
    const int64_t s = j_->get<int64_t>();
    if (s < 0) fail(fmt::format("is {}; it cannot be negative", s));
    v = static_cast<uint64_t>(s);
  } else {
    wrong_type("an integer");
  }
  if (v < lo || v > hi) fail(fmt::format("is {}, outside {}..{}", v, lo, hi));
  return v;
}

int64_t JsonField::i64(int64_t lo, int64_t hi) const {
  int64_t v = 0;
  if (j_->is_number_unsigned()) {
    const uint64_t u = j_->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail(fmt::format("is {}, outside {}..{}", u, lo, hi));
    v = static_cast<int64_t>(u);
  } else if (j_->is_number_integer()) {
    v = j_->get<int64_t>();
  } else {
    wrong_type("an integer");
  }
  if (v < lo || v > hi) fail(fmt::format("is {}, outside {}..{}", v, lo, hi));
  return v;
}

uint32_t JsonField::u32(uint32_t lo, uint32_t hi) const { return static_cast<uint32_t>(u64(lo, hi)); }

int JsonField::i32(int lo, int hi) const { return static_cast<int>(i64(lo, hi)); }

bool JsonField::boolean() const {
  if (!j_->is_boolean()) wrong_type("true or false");
  return j_->get<bool>();
}

double JsonField::number() const {
  if (!j_->is_number()) wrong_type("a number");
  const double v = j_->get<double>();
  if (!std::isfinite(v)) fail("is not a finite number");
  return v;
}

std::string JsonField::str(size_t max_bytes) const {
  if (!j_->is_string()) wrong_type("a string");
  const auto& s = j_->get_ref<const std::string&>();
  if (s.size() > max_bytes) fail(fmt::format("is a string of {} bytes, at most {} are allowed", s.size(), max_bytes));
  return s;
}

uint64_t JsonField::hex() const {
  const std::string s = str(64);
  try {
    return parse_hex_addr(s);
  } catch (const Error& e) {
    fail(fmt::format("is not a hexadecimal 64-bit value ({})", e.what()));
  }
}

}  // namespace kerncap::format
