#include "cubin/bytes.hpp"

#include <fmt/format.h>

namespace kerncap::cubin::detail {

void Bytes::fail(std::string_view field, std::string_view problem) const {
  input_error(fmt::format("{}: {}: {} (the file is damaged or not an NVIDIA code object; "
                          "extract it again or pass the original)",
                          what_, field, problem));
}

void Bytes::fail_range(uint64_t off, uint64_t len, std::string_view field) const {
  fail(field, fmt::format("{} bytes at offset {:#x} run past the end ({} bytes); truncated?", len, off,
                          data_.size()));
}

}  // namespace kerncap::cubin::detail
