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
#include "compare/floats.hpp"

namespace kerncap::compare {
namespace {

constexpr uint64_t kBlock = 64 * 1024;  // fits L1/L2 so the element walk rereads from cache

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// How many of the 8 bytes of x are non-zero (x = expected ^ actual).
inline unsigned nonzero_bytes(uint64_t x) {
  constexpr uint64_t lo7 = 0x7f7f7f7f7f7f7f7full;
  return static_cast<unsigned>(std::popcount((((x & lo7) + lo7) | x) & ~lo7));
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

void track_error(Result& r, double abs_err, double magnitude) {
  r.max_abs_error = std::max(r.max_abs_error, abs_err);
  r.max_rel_error = std::max(r.max_rel_error, magnitude > 0 ? abs_err / magnitude : abs_err);
}

// Floating-point elements of one differing block.
template <typename F>
void float_elements(const uint8_t* e, const uint8_t* a, uint64_t count, uint64_t offset, const Tolerance& tol,
                    Result& r) {
  using Bits = typename F::Bits;
  for (uint64_t i = 0; i < count; ++i) {
    const Bits be = load<Bits>(e + i * sizeof(Bits)), ba = load<Bits>(a + i * sizeof(Bits));
    const bool ne = F::nan(be), na = F::nan(ba), ie = F::inf(be), ia = F::inf(ba);
    r.nan_expected += ne;
    r.nan_actual += na;
    r.inf_expected += ie;
    r.inf_actual += ia;
    bool ok;
    if (ne || na) {
      ok = ne && na && tol.nan_equal;
    } else if (be == ba) {
      ok = true;
    } else {
      const double ve = F::value(be), va = F::value(ba);
      if (ie || ia) {
        ok = ve == va;  // same-signed infinities only
      } else {
        const double err = std::fabs(va - ve), mag = std::fabs(ve);
        ok = err <= tol.atol + tol.rtol * mag;
        track_error(r, err, mag);
      }
    }
    if (!ok) {
      ++r.mismatches;
      note_bad(r, offset + i * sizeof(Bits));
    }
  }
}

// NaN/Inf in a block that is byte-identical on both sides: counted once, added to both.
// Returns false when the block still needs the element walk (NaN with nan_equal off).
template <typename F>
bool float_identical_block(const uint8_t* e, uint64_t count, const Tolerance& tol, Result& r) {
  using Bits = typename F::Bits;
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
  for (uint64_t i = 0; i < count; ++i) {
    const T ve = load<T>(e + i * sizeof(T)), va = load<T>(a + i * sizeof(T));
    if (ve == va) continue;
    // |a - e| exactly, in unsigned arithmetic: it always fits in 64 bits.
    using U = std::make_unsigned_t<T>;
    const uint64_t diff = va > ve ? static_cast<U>(static_cast<U>(va) - static_cast<U>(ve))
                                  : static_cast<U>(static_cast<U>(ve) - static_cast<U>(va));
    const double err = static_cast<double>(diff);
    track_error(r, err, std::fabs(static_cast<double>(ve)));
    if (err > tol.atol) {
      ++r.mismatches;
      note_bad(r, offset + i * sizeof(T));
    }
  }
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

void Comparator::feed(const uint8_t* expected, const uint8_t* actual, uint64_t n, uint64_t offset) {
  if (n == 0) return;
  const unsigned size = dtype_size(dtype_);
  if (ended_partial_)
    fail(ErrorKind::Internal, fmt::format("compare: chunk at offset {} follows a chunk that ended inside a {} "
                                          "element; only a region's last chunk may be partial",
                                          offset, to_string(dtype_)));
  if (offset % size)
    fail(ErrorKind::Internal, fmt::format("compare: chunk offset {} is not a multiple of the {} element size {}",
                                          offset, to_string(dtype_), size));
  Result r = result_;  // a local copy: the byte pointers cannot alias it, so it stays in registers
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
