#pragma once
// Host-side bookkeeping of a footprint measurement, free of CUDA calls so it is unit
// tested: the device's region table (regions at their replay addresses, sorted, with the
// offsets of their bitmaps), and turning what the device recorded back into the capture's
// terms (manifest regions, captured addresses).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "footprint/device_abi.h"
#include "format/footprint.hpp"
#include "format/manifest.hpp"

namespace kerncap::footprint {

struct RegionTable {
  std::vector<kc_fp_region> entries;  // sorted by replay base; empty regions left out
  std::vector<size_t> manifest_index;  // entries[k] is manifest region manifest_index[k]
  uint64_t words = 0;                  // 32-bit bitmap words of all entries together

  // The entry whose [base, base + size) holds the replay address.
  std::optional<size_t> find(uint64_t replay_address) const;
};

// Bitmap words one region needs: read and rbw at 4-byte granules, written at bytes.
uint64_t read_words(uint64_t size);
uint64_t written_words(uint64_t size);

// `replay_addresses[i]` is where manifest region i lives in the replay (Session::address).
// Throws Error(Input) if two regions overlap there: an access could not be attributed.
RegionTable build_region_table(const format::Manifest& m, std::span<const uint64_t> replay_addresses);

// The device's bitmap words (RegionTable::words of them) as per-region footprints, in
// manifest order, with the captured addresses.
std::vector<format::RegionFootprint> collect_regions(const format::Manifest& m, const RegionTable& t,
                                                     std::span<const uint32_t> words);

// An escape record in the capture's terms: flags decoded, and where it lies relative to
// the nearest captured region ("16 B past the end of region 2 (device, 1.0 MiB)").
format::Escape to_escape(const kc_fp_escape& e, const format::Manifest& m, const RegionTable& t);

}  // namespace kerncap::footprint
