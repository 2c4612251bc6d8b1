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

// Thrown out of the parser callback; caught in parse_bounded_json only.
struct TooDeep {};
struct DuplicateKey {
  std::string key;
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
  // The keys of each object being parsed: a key given twice is refused, not read as its last
  // value (two readers could then read two different documents from one file).
  std::vector<std::unordered_set<std::string>> keys;
  const nlohmann::json::parser_callback_t limit = [&keys](int depth, nlohmann::json::parse_event_t ev,
                                                          nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    // depth counts the containers around the one that starts.
    if ((ev == E::object_start || ev == E::array_start) && depth >= kMaxJsonDepth) throw TooDeep{};
    if (ev == E::object_start) keys.emplace_back();
    if (ev == E::object_end && !keys.empty()) keys.pop_back();
    if (ev == E::key && !keys.empty() && parsed.is_string() &&
        !keys.back().insert(parsed.get_ref<const std::string&>()).second)
      throw DuplicateKey{parsed.get<std::string>()};
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit);
  } catch (const TooDeep&) {
    doc.fail(fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth));
  } catch (const DuplicateKey& d) {
    doc.fail(fmt::format("the key \"{}\" appears twice in one object (ambiguous: refused)", d.key.substr(0, 80)));
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
