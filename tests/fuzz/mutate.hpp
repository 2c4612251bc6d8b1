#pragma once
// A small seeded mutator: byte-level edits for binary code objects and blobs, and
// JSON-aware edits for manifests (a value replaced by a hostile one of any type). No
// coverage feedback: the seeds are real captures and code objects, and the edits aim at
// the fields readers trust (sizes, offsets, counts, names).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kerncap::fuzz {

using Rng = std::mt19937_64;
using Bytes = std::vector<uint8_t>;

// 1-4 byte-level edits: bit flips, interesting integers (0, -1, 2^31, 2^63...) written
// over aligned fields, range deletion, duplication, insertion, truncation, splicing.
void mutate_bytes(Bytes& data, Rng& rng, const std::vector<Bytes>& splice_from);

// 1-3 edits of the JSON tree: a value replaced by a hostile value of any type (huge,
// negative, fractional, deep nesting, path escapes, control characters, Makefile and shell
// syntax), keys removed or duplicated into other objects, arrays emptied or repeated.
void mutate_json(nlohmann::json& j, Rng& rng);

// Splices a value nested 1,000-200,000 levels deep into a JSON object's text (built as
// text: a tree that deep would overflow the fuzzer's own stack).
void deep_nesting(std::string& json_text, Rng& rng);

// A hostile string: path escapes, NUL, newlines, `$(...)`, very long.
std::string hostile_string(Rng& rng);

// Issue 38's classes, as text edits of a JSON document: a key of some object given a second
// time (before the first, with another value), and a NUL with bytes after it (at the end or
// inside).
void duplicate_key(std::string& json_text, Rng& rng);
void nul_bytes(std::string& text, Rng& rng);

// 1-3 TOML-aware edits: a value replaced by a hostile one (nan, inf, negative, huge, wrong
// type, deeply nested arrays, regexes that nest deep), a key repeated, a line added to a
// section, a huge comment, or byte edits.
void mutate_toml(std::string& text, Rng& rng);

}  // namespace kerncap::fuzz
