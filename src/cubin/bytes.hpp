#pragma once
// Bounds-checked little-endian reads over an untrusted image. Every code object the
// reader sees may be truncated or hostile (fuzzed, half-written captures), so no read
// touches memory outside the span: a bad offset is an Error(Input) naming what was read.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace kerncap::cubin::detail {

class Bytes {
 public:
  // `what` names the object in error messages ("cubin", "fatbin entry 2").
  Bytes(std::span<const uint8_t> data, std::string what) : data_(data), what_(std::move(what)) {}

  uint64_t size() const { return data_.size(); }
  std::span<const uint8_t> all() const { return data_; }
  const std::string& what() const { return what_; }

  bool has(uint64_t off, uint64_t len) const { return off <= data_.size() && len <= data_.size() - off; }

  void need(uint64_t off, uint64_t len, std::string_view field) const {
    if (!has(off, len)) fail_range(off, len, field);
  }

  template <class T>
  T read(uint64_t off, std::string_view field) const {
    need(off, sizeof(T), field);
    T v;
    std::memcpy(&v, data_.data() + off, sizeof(T));  // x86/ARM hosts are little endian
    return v;
  }
  uint8_t u8(uint64_t off, std::string_view field) const { return read<uint8_t>(off, field); }
  uint16_t u16(uint64_t off, std::string_view field) const { return read<uint16_t>(off, field); }
  uint32_t u32(uint64_t off, std::string_view field) const { return read<uint32_t>(off, field); }
  uint64_t u64(uint64_t off, std::string_view field) const { return read<uint64_t>(off, field); }

  std::span<const uint8_t> sub(uint64_t off, uint64_t len, std::string_view field) const {
    need(off, len, field);
    return data_.subspan(off, len);
  }

  // A NUL-terminated string starting at `off`; the NUL must lie inside the span.
  std::string_view cstr(uint64_t off, std::string_view field) const {
    need(off, 1, field);
    const auto* p = reinterpret_cast<const char*>(data_.data() + off);
    const void* nul = std::memchr(p, 0, data_.size() - off);
    if (!nul) fail(field, "string is not terminated");
    return {p, static_cast<size_t>(static_cast<const char*>(nul) - p)};
  }

  [[noreturn]] void fail(std::string_view field, std::string_view problem) const;

 private:
  [[noreturn]] void fail_range(uint64_t off, uint64_t len, std::string_view field) const;

  std::span<const uint8_t> data_;
  std::string what_;
};

}  // namespace kerncap::cubin::detail
