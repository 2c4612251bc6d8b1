// The streaming comparator. Regions can be gigabytes and are usually identical or nearly
// so: every chunk is walked in blocks that memcmp first, and only a block that differs is
// looked at element by element.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "common/error.hpp"
#include "compare/compare.hpp"
#include "compare/element.hpp"
#include "compare/floats.hpp"

namespace kerncap::compare {
namespace {

constexpr uint64_t kBlock = kBlockBytes;  // fits L1/L2 so the element walk rereads from cache

// How many of the 8 bytes of x are non-zero (x = expected ^ actual): mark each non-zero
// byte in its top bit, then sum the marks with one multiply (no popcnt in baseline x86-64).
inline unsigned nonzero_bytes(uint64_t x) {
  constexpr uint64_t lo7 = 0x7f7f7f7f7f7f7f7full;
  const uint64_t marks = ((((x & lo7) + lo7) | x) & ~lo7) >> 7;
  return static_cast<unsigned>((marks * 0x0101010101010101ull) >> 56);
}

void note_bad(Result& r, uint64_t offset) {
  if (!r.first_bad_offset || offset < *r.first_bad_offset) r.first_bad_offset = offset;
}

// Differing bytes in [0, n), 8 at a time; `first` gets the index of the first one.
uint64_t diff_bytes(const uint8_t* e, const uint8_t* a, uint64_t n, std::optional<uint64_t>& first) {
  uint64_t count = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x = load<uint64_t>(e + i) ^ load<uint64_t>(a + i);
    if (!x) continue;
    if (!first) first = i + static_cast<uint64_t>(std::countr_zero(x) / 8);  // little-endian
    count += nonzero_bytes(x);
  }
  for (; i < n; ++i)
    if (e[i] != a[i]) {
      if (!first) first = i;
      ++count;
    }
  return count;
}

// Counters for one block, kept in locals: the byte pointers (uint8_t may alias anything)
// would otherwise force every update of a Result field through memory.
struct Tally {
  uint64_t nan_e = 0, nan_a = 0, inf_e = 0, inf_a = 0, bad = 0;
  uint64_t first_bad = UINT64_MAX;  // element index within the block
  double max_abs = 0, max_rel = 0;

  void error(double err, double mag) {
    max_abs = std::max(max_abs, err);
    // err / mag > max_rel without dividing on every element.
    if (mag > 0 ? err > max_rel * mag : err > max_rel) max_rel = mag > 0 ? err / mag : err;
  }
  void mismatch(uint64_t i) {
    ++bad;
    first_bad = std::min(first_bad, i);
  }
  void merge_into(Result& r, uint64_t offset, unsigned size) const {
    r.nan_expected += nan_e;
    r.nan_actual += nan_a;
    r.inf_expected += inf_e;
    r.inf_actual += inf_a;
    r.mismatches += bad;
    r.max_abs_error = std::max(r.max_abs_error, max_abs);
    r.max_rel_error = std::max(r.max_rel_error, max_rel);
    if (bad) note_bad(r, offset + first_bad * size);
  }
};

// Floating-point elements of one differing block. Finite pairs take the short path; NaN
// and Inf (rare) are classified only when an exponent says one may be there.
template <typename F>
void float_elements(const uint8_t* e, const uint8_t* a, uint64_t count, uint64_t offset, const Tolerance& tol,
                    Result& r) {
  using Bits = typename F::Bits;
  const double atol = tol.atol, rtol = tol.rtol;  // locals: the byte loads could alias `tol`
  const bool nan_equal = tol.nan_equal;
  Tally t;
  for (uint64_t i = 0; i < count; ++i) {
    const Bits be = load<Bits>(e + i * sizeof(Bits)), ba = load<Bits>(a + i * sizeof(Bits));
    const bool special = F::special(be) || F::special(ba);
    if (be == ba && !special) continue;
    bool ok;
    if (!special) {
      const double ve = F::value(be), va = F::value(ba);
      const double err = std::fabs(va - ve), mag = std::fabs(ve);
      ok = err <= atol + rtol * mag;
      t.error(err, mag);
    } else {
      const bool ne = F::nan(be), na = F::nan(ba), ie = F::inf(be), ia = F::inf(ba);
      t.nan_e += ne;
      t.nan_a += na;
      t.inf_e += ie;
      t.inf_a += ia;
      // Not NaN, so at least one side is an infinity: only the same infinity matches.
      ok = (ne || na) ? ne && na && nan_equal : be == ba;
    }
    if (!ok) t.mismatch(i);
  }
  t.merge_into(r, offset, sizeof(Bits));
}

// Replicates a lane value across a 64-bit word.
template <typename Bits>
constexpr uint64_t replicate(uint64_t v) {
  uint64_t out = 0;
  for (unsigned i = 0; i < 8 / sizeof(Bits); ++i) out |= v << (8 * sizeof(Bits) * i);
  return out;
}

// Whether any element of a block might be NaN/Inf, 8 bytes at a time: a lane is special
// when all its kSpecial bits are set, i.e. z = ~w & kSpecial is zero in that lane; adding
// 2^(W-1) - 1 sets a lane's top bit exactly when z is non-zero (kSpecial never holds the
// sign bit, so nothing carries across lanes).
template <typename F>
bool any_special(const uint8_t* p, uint64_t len) {
  using Bits = typename F::Bits;
  constexpr uint64_t top = uint64_t{1} << (8 * sizeof(Bits) - 1);
  constexpr uint64_t mask = replicate<Bits>(F::kSpecial), low = replicate<Bits>(top - 1),
                     high = replicate<Bits>(top);
  uint64_t acc = 0, i = 0;
  for (; i + 8 <= len; i += 8) acc |= (((~load<uint64_t>(p + i) & mask) + low) & high) ^ high;
  for (; i < len; i += sizeof(Bits)) acc |= F::special(load<Bits>(p + i));
  return acc != 0;
}

// NaN/Inf in a block that is byte-identical on both sides: counted once, added to both.
// Returns false when the block still needs the element walk (NaN with nan_equal off).
template <typename F>
bool float_identical_block(const uint8_t* e, uint64_t count, const Tolerance& tol, Result& r) {
  using Bits = typename F::Bits;
  if (!any_special<F>(e, count * sizeof(Bits))) return true;
  uint64_t nan = 0, inf = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const Bits b = load<Bits>(e + i * sizeof(Bits));
    nan += F::nan(b);
    inf += F::inf(b);
  }
  if (nan && !tol.nan_equal) return false;
  r.nan_expected += nan;
  r.nan_actual += nan;
  r.inf_expected += inf;
  r.inf_actual += inf;
  return true;
}

// Integer elements of one differing block: exact unless atol allows a difference.
template <typename T>
void int_elements(const uint8_t* e, const uint8_t* a, uint64_t count, uint64_t offset, const Tolerance& tol,
                  Result& r) {
  const double atol = tol.atol;
  Tally t;
  for (uint64_t i = 0; i < count; ++i) {
    const T ve = load<T>(e + i * sizeof(T)), va = load<T>(a + i * sizeof(T));
    if (ve == va) continue;
    // |a - e| exactly, in unsigned arithmetic: it always fits in 64 bits.
    using U = std::make_unsigned_t<T>;
    const uint64_t diff = va > ve ? static_cast<U>(static_cast<U>(va) - static_cast<U>(ve))
                                  : static_cast<U>(static_cast<U>(ve) - static_cast<U>(va));
    const double err = static_cast<double>(diff);
    t.error(err, std::fabs(static_cast<double>(ve)));
    if (err > atol) t.mismatch(i);
  }
  t.merge_into(r, offset, sizeof(T));
}

template <typename Walk, typename Identical>
void walk_blocks(const uint8_t* e, const uint8_t* a, uint64_t n, uint64_t offset, unsigned size, Result& r,
                 Walk&& elements, Identical&& identical) {
  for (uint64_t pos = 0; pos < n; pos += kBlock) {
    const uint64_t len = std::min(kBlock, n - pos);  // kBlock and n are multiples of size
    const uint64_t count = len / size;
    if (std::memcmp(e + pos, a + pos, len) == 0 && identical(e + pos, count)) continue;
    std::optional<uint64_t> first;
    r.differing_bytes += diff_bytes(e + pos, a + pos, len, first);
    elements(e + pos, a + pos, count, offset + pos);
  }
}

template <typename F>
void feed_float(const uint8_t* e, const uint8_t* a, uint64_t n, uint64_t offset, const Tolerance& tol, Result& r) {
  walk_blocks(
      e, a, n, offset, sizeof(typename F::Bits), r,
      [&](const uint8_t* be, const uint8_t* ba, uint64_t count, uint64_t off) {
        float_elements<F>(be, ba, count, off, tol, r);
      },
      [&](const uint8_t* be, uint64_t count) { return float_identical_block<F>(be, count, tol, r); });
}

template <typename T>
void feed_int(const uint8_t* e, const uint8_t* a, uint64_t n, uint64_t offset, const Tolerance& tol, Result& r) {
  walk_blocks(
      e, a, n, offset, sizeof(T), r,
      [&](const uint8_t* be, const uint8_t* ba, uint64_t count, uint64_t off) {
        int_elements<T>(be, ba, count, off, tol, r);
      },
      [](const uint8_t*, uint64_t) { return true; });
}

void feed_bytes(const uint8_t* e, const uint8_t* a, uint64_t n, uint64_t offset, Result& r) {
  for (uint64_t pos = 0; pos < n; pos += kBlock) {
    const uint64_t len = std::min(kBlock, n - pos);
    if (std::memcmp(e + pos, a + pos, len) == 0) continue;
    std::optional<uint64_t> first;
    const uint64_t count = diff_bytes(e + pos, a + pos, len, first);
    r.differing_bytes += count;
    r.mismatches += count;
    note_bad(r, offset + pos + *first);
  }
}

}  // namespace

Comparator::Comparator(DType dtype, Tolerance tol) : dtype_(dtype), tol_(tol) { result_.dtype = dtype; }

bool Comparator::plain(uint8_t value) const {
  // One element of `value` bytes through the comparator itself: whatever it counts beyond
  // bytes and elements (NaN, Inf, a mismatch) rules the shortcut out.
  uint8_t one[8];
  std::memset(one, value, sizeof one);
  Comparator c(dtype_, tol_);
  c.feed(one, one, dtype_size(dtype_), 0);
  const Result& r = c.result();
  return r.mismatches == 0 && r.differing_bytes == 0 && r.nan_expected == 0 && r.nan_actual == 0 &&
         r.inf_expected == 0 && r.inf_actual == 0 && r.max_abs_error == 0 && r.max_rel_error == 0;
}

bool Comparator::plain(const uint8_t* bytes, uint64_t n) const {
  Comparator c(dtype_, tol_);
  c.feed(bytes, bytes, n, 0);
  const Result& r = c.result();
  return r.mismatches == 0 && r.differing_bytes == 0 && r.nan_expected == 0 && r.nan_actual == 0 &&
         r.inf_expected == 0 && r.inf_actual == 0 && r.max_abs_error == 0 && r.max_rel_error == 0;
}

void Comparator::feed_identical(uint64_t n, uint64_t offset) {
  if (n == 0) return;
  check_chunk(offset);
  const unsigned size = dtype_size(dtype_);
  const uint64_t whole = n / size * size;
  result_.bytes += n;
  result_.elements += whole / size;
  if (whole != n) {  // a trailing partial element, identical: one element, no difference
    ended_partial_ = true;
    ++result_.elements;
  }
}

void Comparator::check_chunk(uint64_t offset) const {
  const unsigned size = dtype_size(dtype_);
  if (ended_partial_)
    fail(ErrorKind::Internal, fmt::format("compare: chunk at offset {} follows a chunk that ended inside a {} "
                                          "element; only a region's last chunk may be partial",
                                          offset, to_string(dtype_)));
  if (offset % size)
    fail(ErrorKind::Internal, fmt::format("compare: chunk offset {} is not a multiple of the {} element size {}",
                                          offset, to_string(dtype_), size));
}

void Comparator::feed(const uint8_t* expected, const uint8_t* actual, uint64_t n, uint64_t offset) {
  if (n == 0) return;
  const unsigned size = dtype_size(dtype_);
  check_chunk(offset);
  Result r = result_;  // a local: unlike a member, the byte pointers cannot alias it
  const uint64_t whole = n / size * size;
  r.bytes += n;
  r.elements += whole / size;
  switch (dtype_) {
    case DType::Bytes: feed_bytes(expected, actual, whole, offset, r); break;
    case DType::F64: feed_float<floats::F64>(expected, actual, whole, offset, tol_, r); break;
    case DType::F32: feed_float<floats::F32>(expected, actual, whole, offset, tol_, r); break;
    case DType::F16: feed_float<floats::F16>(expected, actual, whole, offset, tol_, r); break;
    case DType::BF16: feed_float<floats::BF16>(expected, actual, whole, offset, tol_, r); break;
    case DType::F8E4M3: feed_float<floats::E4M3>(expected, actual, whole, offset, tol_, r); break;
    case DType::F8E5M2: feed_float<floats::E5M2>(expected, actual, whole, offset, tol_, r); break;
    case DType::I8: feed_int<int8_t>(expected, actual, whole, offset, tol_, r); break;
    case DType::I16: feed_int<int16_t>(expected, actual, whole, offset, tol_, r); break;
    case DType::I32: feed_int<int32_t>(expected, actual, whole, offset, tol_, r); break;
    case DType::I64: feed_int<int64_t>(expected, actual, whole, offset, tol_, r); break;
    case DType::U8: feed_int<uint8_t>(expected, actual, whole, offset, tol_, r); break;
    case DType::U16: feed_int<uint16_t>(expected, actual, whole, offset, tol_, r); break;
    case DType::U32: feed_int<uint32_t>(expected, actual, whole, offset, tol_, r); break;
    case DType::U64: feed_int<uint64_t>(expected, actual, whole, offset, tol_, r); break;
  }
  if (whole != n) {
    // A trailing partial element (the region's size is not a multiple of the element
    // size): it has no value, so its bytes must match exactly. It counts as one element.
    ended_partial_ = true;
    ++r.elements;
    std::optional<uint64_t> first;
    const uint64_t count = diff_bytes(expected + whole, actual + whole, n - whole, first);
    r.differing_bytes += count;
    if (count) {
      ++r.mismatches;
      note_bad(r, offset + whole);
    }
  }
  result_ = r;
}

}  // namespace kerncap::compare
