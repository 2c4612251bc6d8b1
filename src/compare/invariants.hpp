#pragma once
// Invariants of what a replay wrote, whatever the expected values: no NaN, no Inf, nothing
// below zero (in the bytes the application's launch wrote, read as their element types), and
// must_write (the replay changed at least one of those bytes in every region the
// application's launch wrote). Pure functions over host buffers: the replay engine streams
// device memory through them (src/replay/validate.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compare/compare.hpp"

namespace kerncap::compare {

struct Invariants {
  bool no_nan = false;
  bool no_inf = false;
  bool non_negative = false;
  bool must_write = false;
  bool any() const { return no_nan || no_inf || non_negative || must_write; }
  bool values() const { return no_nan || no_inf || non_negative; }  // needs the written values read
  bool operator==(const Invariants&) const = default;
};

// "no_nan,no_inf,non_negative,must_write" (any subset, comma-separated, spaces allowed).
// Throws Error(Usage) naming an unknown name.
Invariants parse_invariant_list(const std::string& list);
// The enabled ones, comma-separated ("none" when none).
std::string to_string(const Invariants& inv);

// NaN/Inf/negative counts of one typed piece; indexes are element indexes in the piece.
struct ValueCounts {
  DType dtype = DType::Bytes;
  uint64_t begin = 0;     // the piece's byte offset in its region
  uint64_t elements = 0;  // elements scanned
  uint64_t nan = 0, inf = 0, negative = 0;
  std::optional<uint64_t> first_nan, first_inf, first_negative;
};

// Whether a dtype has NaN/Inf (floats; fp8e4m3 has NaN only) and values below zero (floats,
// signed integers). Bytes and unsigned integers have neither.
bool has_nan(DType t);
bool has_inf(DType t);
bool has_sign(DType t);

// Scans whole elements of one piece; chunks may come in any order, each with its byte offset
// from the piece's start (a multiple of the element size). A trailing partial element is
// ignored.
class ValueScanner {
 public:
  ValueScanner(DType dtype, uint64_t piece_begin);
  void feed(const uint8_t* data, uint64_t n, uint64_t offset);
  const ValueCounts& counts() const { return counts_; }

 private:
  ValueCounts counts_;
};

// The byte ranges of a piece [begin, end) (element size `size`, elements counted from begin)
// to scan for the written bytes `runs` (sorted [b, e) byte ranges of the region): every whole
// element that touches a run, each once, ranges in order. A trailing partial element is kept
// (the scanner ignores it).
std::vector<std::pair<uint64_t, uint64_t>> element_ranges(uint64_t begin, uint64_t end, unsigned size,
                                                          const std::vector<std::pair<uint64_t, uint64_t>>& runs);

// What one region gave the invariants: the bytes the application's launch changed in it, the
// ones of those the replay changed (from what was in memory before its launch), and the
// value counts of its typed pieces over those bytes.
struct RegionFacts {
  uint32_t id = 0;
  uint64_t written = 0;         // by the application's launch
  uint64_t replay_changed = 0;  // of those bytes, by the replay (when must_write is checked)
  std::vector<ValueCounts> pieces;
  uint64_t known_written = 0;   // bytes the replay must write besides (strong validation poisoned them)
};

struct Violation {
  std::string invariant;  // no_nan | no_inf | non_negative | must_write
  std::optional<uint32_t> region;  // none: the capture as a whole (must_write, nothing written)
  uint64_t count = 0;              // elements (bytes for must_write)
  std::optional<uint64_t> first_index;   // element index in the piece
  std::optional<uint64_t> first_offset;  // byte offset in the region
  std::string dtype;
  std::string message;  // one line, "region 2 (fp32 at +0x0): 3 NaN, first at element 17 (byte +0x44)"
};

struct InvariantReport {
  Invariants checked;
  std::vector<Violation> violations;
  std::vector<std::string> notes;  // checks that did not apply ("region 1: bytes, NaN/Inf/negative not applicable")
  std::vector<RegionFacts> regions;
  bool pass() const { return violations.empty(); }
  // "Invariants: PASS (no_nan, must_write; 2 written region(s))" / "Invariants: FAIL (2 violation(s): ...)".
  std::string line() const;
};

// Applies the enabled invariants to the facts of every region (manifest order).
InvariantReport check_invariants(const Invariants& inv, std::vector<RegionFacts> regions);

}  // namespace kerncap::compare
