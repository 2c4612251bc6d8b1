#pragma once
// Comparing what a replay wrote with what the application wrote. Streaming: a region is fed
// chunk by chunk, in any order, each chunk with its byte offset in the region. Chunks keep
// elements whole (sizes a multiple of the element size); only the region's last chunk may
// end in a partial element, which is compared byte-exact.
#include <cstdint>
#include <optional>
#include <string>

namespace kerncap::compare {

enum class DType { Bytes, F64, F32, F16, BF16, F8E4M3, F8E5M2, I8, I16, I32, I64, U8, U16, U32, U64 };
const char* to_string(DType t);  // canonical short name: bytes, fp32, bf16, fp8e4m3, i32, u8...
// Common spellings, case-insensitive, an optional "torch."/"np." prefix: "f32", "float32",
// "float", "half", "bfloat16", "float8_e4m3fn", "int", "uint8", "bool"...
std::optional<DType> dtype_from_string(const std::string& s);
unsigned dtype_size(DType t);
bool is_float(DType t);

struct Tolerance {
  double atol = 0.0;       // |a - e| <= atol + rtol * |e| passes (integers: rtol is ignored)
  double rtol = 0.0;
  bool nan_equal = true;   // NaN where NaN was expected counts as equal
};

// A starting point for a changed kernel: the type's rounding plus a little reordering, so one
// step of the type always passes (fp64 1e-12, fp32 rtol 1e-5 atol 1e-6, fp16 1e-3, bf16 1e-2,
// fp8e4m3 1/8, fp8e5m2 1/4); exact for integers and bytes.
Tolerance default_tolerance(DType t);

struct Result {
  DType dtype = DType::Bytes;
  uint64_t bytes = 0;
  uint64_t elements = 0;           // a trailing partial element counts as one
  uint64_t mismatches = 0;         // elements (bytes for DType::Bytes) out of tolerance
  uint64_t differing_bytes = 0;    // raw bytes that differ, whatever the tolerance
  std::optional<uint64_t> first_bad_offset;  // byte offset of the first mismatching element
  // Over element pairs where both values are finite (NaN/Inf show in the counts below);
  // relative error is |a - e| / |e|, or |a - e| where e is 0.
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  uint64_t nan_expected = 0, nan_actual = 0, inf_expected = 0, inf_actual = 0;
  bool pass() const { return mismatches == 0; }
  bool exact() const { return differing_bytes == 0; }
};

// The comparator walks each chunk it is fed in blocks of this many bytes from the chunk's
// start: memcmp first, element by element only in a block that differs.
inline constexpr uint64_t kBlockBytes = 64 * 1024;

class Comparator {
 public:
  explicit Comparator(DType dtype = DType::Bytes, Tolerance tol = {});
  // `offset` is the byte offset of this chunk within the region (for first_bad_offset).
  // Throws Error(Internal) when a chunk follows one that ended in a partial element.
  void feed(const uint8_t* expected, const uint8_t* actual, uint64_t n, uint64_t offset);
  // Whether n bytes that all hold `value` on both sides add nothing but byte and element
  // counts (`value` makes no NaN or Inf element of the type): then feed_identical may stand
  // for feeding them.
  bool plain(uint8_t value) const;
  // The same for `n` bytes of any values, fed as both sides from a chunk start: whether they
  // hold no NaN or Inf element (nothing but counts added). The comparison on the device asks
  // it once per block of the expected bytes (replay/compare_plan.hpp plain_blocks).
  bool plain(const uint8_t* bytes, uint64_t n) const;
  // What feed() records for n bytes, each `value` (plain) on both sides, with nothing to
  // read: the device compared them (replay/compare_plan.hpp). Same rules for `offset`.
  void feed_identical(uint64_t n, uint64_t offset);
  const Result& result() const { return result_; }

 private:
  void check_chunk(uint64_t offset) const;  // Error(Internal) on a chunk feed() must refuse

  DType dtype_;
  Tolerance tol_;
  Result result_;
  bool ended_partial_ = false;
};

// One line for humans: "byte-exact", "identical within tolerance (...)", or
// "3 of 1024 fp32 elements differ, first at byte offset 8; max abs ..., max rel ...; ...".
std::string summary(const Result& r);

}  // namespace kerncap::compare

namespace kerncap::compare {
// Folds the result of another part of the same region into `into` (counts add up, maxima
// and the first bad offset combine); `into.dtype` becomes Bytes when the parts differ.
void merge(Result& into, const Result& part);
}  // namespace kerncap::compare
