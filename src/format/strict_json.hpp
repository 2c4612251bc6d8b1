#pragma once
// Reading JSON we did not write ourselves (a capture's manifest, its footprint): parsing
// bounded in size and nesting, and typed accessors that take a value only when it is
// exactly what the field needs. nlohmann's get<T>() converts silently (true or 1.9 to 1,
// -1 to 4294967295, 1e300 to an integer is undefined behaviour); these never convert,
// and every refusal is an Error(Input) naming the field by its path ("launch.grid[0]").
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kerncap::format {

inline constexpr int kMaxJsonDepth = 64;                    // our documents nest 4 deep
inline constexpr uint64_t kMaxJsonBytes = uint64_t{64} << 20;  // 64 MiB

// What a document is called in messages and what to do about a bad one.
struct JsonDoc {
  std::string name;    // "capture manifest"
  std::string advice;  // "the capture is damaged or crafted; extract it again"
  [[noreturn]] void fail(const std::string& what) const;
};

// Parses text, refusing nesting deeper than kMaxJsonDepth before building it (deep nesting
// would exhaust the stack of every recursive copy later).
nlohmann::json parse_bounded_json(std::string_view text, const JsonDoc& doc);

// A value inside a document, with its path for messages. Holds references: keep the
// document alive.
class JsonField {
 public:
  JsonField(const nlohmann::json& j, const JsonDoc& doc, std::string path = "")
      : j_(&j), doc_(&doc), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  const nlohmann::json& json() const { return *j_; }

  JsonField at(const char* key) const;                // required member of an object
  std::optional<JsonField> find(const char* key) const;  // optional member (null is refused too)
  JsonField elem(size_t i) const;                     // element of an array (checked)
  size_t array_size(size_t max = SIZE_MAX) const;     // an array (not null), at most max elements
  void object() const;                                // must be an object

  uint64_t u64(uint64_t lo = 0, uint64_t hi = std::numeric_limits<uint64_t>::max()) const;
  int64_t i64(int64_t lo = std::numeric_limits<int64_t>::min(), int64_t hi = std::numeric_limits<int64_t>::max()) const;
  uint32_t u32(uint32_t lo = 0, uint32_t hi = std::numeric_limits<uint32_t>::max()) const;
  int i32(int lo = std::numeric_limits<int>::min(), int hi = std::numeric_limits<int>::max()) const;
  bool boolean() const;
  double number() const;  // finite; integer or float
  std::string str(size_t max_bytes = 1 << 20) const;
  uint64_t hex() const;   // "0x..." text (64-bit values do not survive JSON numbers)

  [[noreturn]] void fail(const std::string& what) const;  // "<doc>: field '<path>' <what>; <advice>"
  [[noreturn]] void wrong_type(const char* expected) const;

 private:
  const nlohmann::json* j_;
  const JsonDoc* doc_;
  std::string path_;
};

const char* json_type_name(const nlohmann::json& j);

}  // namespace kerncap::format
