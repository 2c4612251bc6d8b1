#pragma once
// Comparing what a replay wrote with what the application wrote. Streaming: regions are
// fed chunk by chunk (chunks must keep elements whole: use multiples of 16 bytes).
#include <cstdint>
#include <optional>
#include <string>

namespace kerncap::compare {

enum class DType { Bytes, F64, F32, F16, BF16, F8E4M3, F8E5M2, I8, I16, I32, I64, U8, U16, U32, U64 };
const char* to_string(DType t);
std::optional<DType> dtype_from_string(const std::string& s);  // "fp32", "f32", "float32", "bf16"...
unsigned dtype_size(DType t);

struct Tolerance {
  double atol = 0.0;       // |a - e| <= atol + rtol * |e| passes
  double rtol = 0.0;
  bool nan_equal = true;   // NaN where NaN was expected counts as equal
};

struct Result {
  DType dtype = DType::Bytes;
  uint64_t bytes = 0;
  uint64_t elements = 0;
  uint64_t mismatches = 0;         // elements (bytes for DType::Bytes) out of tolerance
  uint64_t differing_bytes = 0;    // raw bytes that differ, whatever the tolerance
  std::optional<uint64_t> first_bad_offset;  // byte offset of the first mismatching element
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  uint64_t nan_expected = 0, nan_actual = 0, inf_expected = 0, inf_actual = 0;
  bool pass() const { return mismatches == 0; }
  bool exact() const { return differing_bytes == 0; }
};

class Comparator {
 public:
  explicit Comparator(DType dtype = DType::Bytes, Tolerance tol = {});
  // `offset` is the byte offset of this chunk within the region (for first_bad_offset).
  void feed(const uint8_t* expected, const uint8_t* actual, uint64_t n, uint64_t offset);
  const Result& result() const { return result_; }

 private:
  DType dtype_;
  Tolerance tol_;
  Result result_;
};

// One line for humans: "byte-exact", or "3 of 1024 fp32 elements differ (max abs 1e-3 ...)".
std::string summary(const Result& r);

}  // namespace kerncap::compare
