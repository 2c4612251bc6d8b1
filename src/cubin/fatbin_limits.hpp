#pragma once
// parse_fatbin with an explicit decompression budget (tests use small ones; parse_fatbin
// uses DecompressBudget::for_fatbin of the image's size).
#include <span>
#include <vector>

#include "cubin/cubin.hpp"
#include "cubin/decompress.hpp"

namespace kerncap::cubin::detail {

std::vector<FatbinEntry> parse_fatbin(std::span<const uint8_t> fatbin, DecompressBudget& budget);

}  // namespace kerncap::cubin::detail
