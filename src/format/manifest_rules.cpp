// The rules between a manifest's fields, checked offline before anything (CUDA included)
// trusts them: what replay would otherwise learn late, or never (a wrap-around in 64-bit
// arithmetic lets a run "fit" anywhere).
#include <algorithm>
#include <numeric>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "format/chunk_store.hpp"
#include "format/manifest.hpp"
#include "format/textures_json.hpp"

namespace kerncap::format {
namespace {

[[noreturn]] void bad(const std::string& what) {
  input_error(fmt::format("capture manifest: {}; the capture is damaged or was not written by kerncap; extract it "
                          "again",
                          what));
}

// a + b, or a refusal when it does not fit 64 bits.
uint64_t checked_add(uint64_t a, uint64_t b, const std::string& what) {
  if (a > UINT64_MAX - b) bad(fmt::format("{} overflows 64 bits ({} + {})", what, a, b));
  return a + b;
}

void check_geometry(const Manifest& m) {
  const std::array<uint32_t, 3> grid_max{kMaxGridX, kMaxGridYZ, kMaxGridYZ};
  for (size_t i = 0; i < 3; ++i) {
    if (m.grid[i] < 1 || m.grid[i] > grid_max[i])
      bad(fmt::format("launch.grid[{}] is {}, outside 1..{}", i, m.grid[i], grid_max[i]));
    if (m.block[i] < 1 || m.block[i] > kMaxBlock[i])
      bad(fmt::format("launch.block[{}] is {}, outside 1..{}", i, m.block[i], kMaxBlock[i]));
    if (m.cluster[i] > kMaxClusterDim)
      bad(fmt::format("launch.cluster[{}] is {}, more than {}", i, m.cluster[i], kMaxClusterDim));
  }
  const uint64_t threads = uint64_t{m.block[0]} * m.block[1] * m.block[2];
  if (threads > kMaxBlockThreads)
    bad(fmt::format("launch.block is {}x{}x{} = {} threads, more than the {} a block may have", m.block[0], m.block[1],
                    m.block[2], threads, kMaxBlockThreads));
  if (m.shared_mem_bytes > kMaxSharedMemBytes)
    bad(fmt::format("launch.shared_mem_bytes is {}, more than {}", m.shared_mem_bytes, kMaxSharedMemBytes));
  for (size_t i = 0; i < m.launch_attrs.size(); ++i)
    if (m.launch_attrs[i].raw.size() > kMaxLaunchAttrBytes)
      bad(fmt::format("launch.attributes[{}].raw has {} bytes, more than {}", i, m.launch_attrs[i].raw.size(),
                      kMaxLaunchAttrBytes));
}

void check_params(const Manifest& m) {
  if (m.params_size > kMaxParamBytes)
    bad(fmt::format("params.size is {}, more than the {} a launch may pass", m.params_size, kMaxParamBytes));
  // A parameter has at least one byte: more slots than bytes cannot describe a launch (and a
  // long list hung the readers downstream, issue 38).
  if (m.params.size() > kMaxParamSlots || m.params.size() > std::max<uint64_t>(m.params_size, 1))
    bad(fmt::format("params.slots has {} entries for a {}-byte parameter buffer (at most one per byte, and at most {})",
                    m.params.size(), m.params_size, kMaxParamSlots));
  for (size_t i = 0; i < m.params.size(); ++i) {
    const ParamSlot& s = m.params[i];
    if (uint64_t{s.offset} + s.size > m.params_size)
      bad(fmt::format("params.slots[{}] (offset {}, size {}) lies outside the {}-byte parameter buffer", i, s.offset,
                      s.size, m.params_size));
  }
}

// A sparse region's stored runs: in offset order, inside the region, apart (so the file
// size they add up to cannot wrap either).
void check_stored(const std::vector<StoredRun>& runs, uint64_t region_size, size_t i) {
  uint64_t end = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    const StoredRun& s = runs[k];
    const uint64_t e = checked_add(s.offset, s.size, fmt::format("regions[{}].stored[{}] (offset + size)", i, k));
    if (e > region_size)
      bad(fmt::format("regions[{}].stored[{}] (offset {}, size {}) ends past the region's {} bytes", i, k, s.offset,
                      s.size, region_size));
    if (k && s.offset < end)
      bad(fmt::format("regions[{}].stored[{}] (offset {}) is not after the previous run, which ends at {}", i, k,
                      s.offset, end));
    end = e;
  }
}

// Version 3: the chunks hold exactly the stored bytes; one hash names one content; pruned
// ranges lie inside the region, in order, apart from each other and from the stored runs.
void check_chunks(const Region& r, size_t i, std::map<std::pair<uint64_t, uint64_t>, const ChunkRef*>& names) {
  uint64_t total = 0;
  for (size_t k = 0; k < r.chunks.size(); ++k) {
    const ChunkRef& c = r.chunks[k];
    if (c.size == 0 || c.size > kMaxChunkBytes || c.stored == 0 || c.stored > c.size)
      bad(fmt::format("regions[{}].chunks[{}] has impossible sizes ({} stored for {})", i, k, c.stored, c.size));
    total = checked_add(total, c.size, fmt::format("regions[{}].chunks (their sizes)", i));
    auto [it, fresh] = names.emplace(std::make_pair(c.hash_hi, c.hash_lo), &c);
    if (!fresh && (it->second->size != c.size || it->second->stored != c.stored))
      bad(fmt::format("regions[{}].chunks[{}] names a chunk that another reference gives other sizes", i, k));
  }
  if (r.file.empty() && total != stored_bytes(r))
    bad(fmt::format("regions[{}].chunks hold {} bytes, its stored runs {}", i, total, stored_bytes(r)));
  if (!r.file.empty() && !r.chunks.empty()) bad(fmt::format("regions[{}] has both a file and chunks", i));
  uint64_t end = 0;
  const std::vector<StoredRun> whole{{0, r.size}};
  const auto& stored = r.stored ? *r.stored : whole;
  size_t s = 0;
  for (size_t k = 0; k < r.pruned.size(); ++k) {
    const StoredRun& p = r.pruned[k];
    const uint64_t e = checked_add(p.offset, p.size, fmt::format("regions[{}].pruned[{}] (offset + size)", i, k));
    if (e > r.size || (k && p.offset < end))
      bad(fmt::format("regions[{}].pruned[{}] (offset {}, size {}) is outside the region or not after the previous "
                      "range",
                      i, k, p.offset, p.size));
    while (s < stored.size() && stored[s].offset + stored[s].size <= p.offset) ++s;
    if (s < stored.size() && stored[s].offset < e)
      bad(fmt::format("regions[{}].pruned[{}] (offset {}, size {}) overlaps a stored run", i, k, p.offset, p.size));
    end = e;
  }
  if (r.omitted && !r.pruned.empty()) bad(fmt::format("regions[{}] is omitted and pruned", i));
}

void check_regions(const Manifest& m) {
  std::map<std::pair<uint64_t, uint64_t>, const ChunkRef*> names;
  std::set<uint32_t> ids;
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const Region& r = m.regions[i];
    if (!ids.insert(r.id).second) bad(fmt::format("regions[{}] repeats region id {}", i, r.id));
    checked_add(r.base, r.size, fmt::format("regions[{}] (base + size)", i));
    if ((r.kind == MemKind::Array) != (r.base >= kArrayRegionBase))
      bad(fmt::format("regions[{}] ({}) has base {}: CUDA arrays' contents, and only they, lie at or above {}", i,
                      to_string(r.kind), hex_addr(r.base), hex_addr(kArrayRegionBase)));
    if (r.kind == MemKind::Global && r.global.empty())
      bad(fmt::format("regions[{}] is a module global without a symbol name ('global')", i));
    if (r.stored) check_stored(*r.stored, r.size, i);
    check_chunks(r, i, names);
    if (r.omitted && (!r.stored || !r.stored->empty()))
      bad(fmt::format("regions[{}] is omitted but has stored bytes (an omitted region stores none: 'stored': [])", i));
  }
  // In address order (the manifest's own order is kept: other files index regions by it).
  std::vector<size_t> order(m.regions.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return m.regions[a].base < m.regions[b].base; });
  for (size_t k = 1; k < order.size(); ++k) {
    const Region& a = m.regions[order[k - 1]];
    const Region& b = m.regions[order[k]];
    if (a.size && b.size && a.base + a.size > b.base)
      bad(fmt::format("regions {} ({} bytes at {}) and {} ({} bytes at {}) overlap", a.id, a.size, hex_addr(a.base), b.id,
                      b.size, hex_addr(b.base)));
  }
  // Each file holds one thing.
  std::set<std::string> files{m.params_file};
  auto unique_file = [&](const std::string& f, const std::string& field) {
    if (!files.insert(f).second) bad(fmt::format("{} names {}, a file another field names too", field, f));
  };
  unique_file(m.image_file, "image.file");
  unique_file(m.after_file, "after.file");
  for (size_t i = 0; i < m.regions.size(); ++i)
    if (!m.regions[i].file.empty()) unique_file(m.regions[i].file, fmt::format("regions[{}].file", i));
}

void check_after(const Manifest& m) {
  if (m.chunk_bytes == 0) bad("after.chunk_bytes is 0");
  struct Span {
    uint32_t region;
    uint64_t offset, size;
    size_t index;
  };
  std::vector<Span> spans;
  spans.reserve(m.after.size());
  // Regions by id (unique: check_regions): a crafted capture may list hundreds of thousands of
  // regions and of runs, and a search of the regions per run hung (issue 38).
  std::unordered_map<uint32_t, const Region*> by_id;
  for (const auto& r : m.regions) by_id.emplace(r.id, &r);
  uint64_t stored = 0;  // runs are stored back to back in after.bin
  for (size_t i = 0; i < m.after.size(); ++i) {
    const AfterRun& a = m.after[i];
    const auto found = by_id.find(a.region);
    const Region* r = found == by_id.end() ? nullptr : found->second;
    if (!r) bad(fmt::format("after.runs[{}]: AFTER run for region {} lies outside it (no such region)", i, a.region));
    if (a.size == 0) bad(fmt::format("after.runs[{}] is empty", i));
    if (a.offset > r->size || a.size > r->size - a.offset)
      bad(fmt::format("after.runs[{}]: AFTER run for region {} lies outside it (offset {} + size {} > {} bytes)", i,
                      a.region, a.offset, a.size, r->size));
    if (a.file_offset != stored)
      bad(fmt::format("after.runs[{}].file_offset is {}, expected {} (runs are stored back to back in {})", i,
                      a.file_offset, stored, m.after_file));
    stored = checked_add(stored, a.size, fmt::format("after.runs[{}] (file_offset + size)", i));
    spans.push_back({a.region, a.offset, a.size, i});
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span& x, const Span& y) { return std::tie(x.region, x.offset) < std::tie(y.region, y.offset); });
  for (size_t k = 1; k < spans.size(); ++k)
    if (spans[k].region == spans[k - 1].region && spans[k - 1].offset + spans[k - 1].size > spans[k].offset)
      bad(fmt::format("after.runs[{}] and after.runs[{}] overlap in region {}", spans[k - 1].index, spans[k].index,
                      spans[k].region));
}

}  // namespace

void check_manifest(const Manifest& m) {
  check_geometry(m);
  check_params(m);
  check_regions(m);
  check_after(m);
  check_textures(m);
}

}  // namespace kerncap::format
