#include "storage/prune.hpp"

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/private_files.hpp"
#include "format/capture_dir.hpp"
#include "format/chunk_store.hpp"
#include "format/footprint.hpp"
#include "format/region_bytes.hpp"

namespace kerncap::format {
namespace {

using Ranges = std::vector<StoredRun>;

// Sorted, with overlapping or adjacent ranges joined.
Ranges normalized(Ranges v) {
  std::sort(v.begin(), v.end(), [](const StoredRun& a, const StoredRun& b) { return a.offset < b.offset; });
  Ranges out;
  for (const auto& r : v) {
    if (r.size == 0) continue;
    if (!out.empty() && r.offset <= out.back().offset + out.back().size)
      out.back().size = std::max(out.back().offset + out.back().size, r.offset + r.size) - out.back().offset;
    else
      out.push_back(r);
  }
  return out;
}

void add_bitmap(const Bitmap& b, uint64_t size, Ranges& out) {
  const uint64_t g = b.granule();
  b.for_each_run([&](uint64_t first, uint64_t count) {
    const uint64_t lo = first * g, hi = std::min(size, (first + count) * g);
    if (lo < hi) out.push_back({lo, hi - lo});
  });
}

// The bytes to keep: touched bytes widened to kPruneGranule, gaps shorter than `min_gap` kept.
Ranges keep_ranges(const RegionFootprint& f, uint64_t size) {
  Ranges touched;
  add_bitmap(f.read, size, touched);
  add_bitmap(f.written, size, touched);
  for (auto& r : touched) {
    const uint64_t lo = r.offset / kPruneGranule * kPruneGranule;
    const uint64_t hi = std::min(size, (r.offset + r.size + kPruneGranule - 1) / kPruneGranule * kPruneGranule);
    r = {lo, hi - lo};
  }
  touched = normalized(std::move(touched));
  const uint64_t min_gap = std::max(kPruneMinGap, size / kMaxPrunedRanges);
  Ranges out;
  for (const auto& r : touched) {
    if (!out.empty() && r.offset - (out.back().offset + out.back().size) < min_gap)
      out.back().size = r.offset + r.size - out.back().offset;
    else
      out.push_back(r);
  }
  return out;
}

Ranges intersect(const Ranges& a, const Ranges& b) {
  Ranges out;
  size_t j = 0;
  for (const auto& x : a) {
    while (j < b.size() && b[j].offset + b[j].size <= x.offset) ++j;
    for (size_t k = j; k < b.size() && b[k].offset < x.offset + x.size; ++k) {
      const uint64_t lo = std::max(x.offset, b[k].offset), hi = std::min(x.offset + x.size, b[k].offset + b[k].size);
      if (lo < hi) out.push_back({lo, hi - lo});
    }
  }
  return out;
}

Ranges complement(const Ranges& v, uint64_t size) {
  Ranges out;
  uint64_t at = 0;
  for (const auto& r : v) {
    if (r.offset > at) out.push_back({at, r.offset - at});
    at = r.offset + r.size;
  }
  if (at < size) out.push_back({at, size - at});
  return out;
}

uint64_t total(const Ranges& v) {
  uint64_t n = 0;
  for (const auto& r : v) n += r.size;
  return n;
}

bool same(const Ranges& a, const Ranges& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const StoredRun& x, const StoredRun& y) { return x.offset == y.offset && x.size == y.size; });
}

// "<32 hex>.zst" or "<32 hex>.raw": a chunk file this capture may own.
bool chunk_name(const std::string& name, std::pair<uint64_t, uint64_t>* key) {
  if (name.size() != 36 || (name.substr(32) != ".zst" && name.substr(32) != ".raw")) return false;
  ChunkRef c;
  if (!parse_chunk_hash(name.substr(0, 32), c)) return false;
  *key = {c.hash_hi, c.hash_lo};
  return true;
}

// A chunk's temporary, ".<32 hex>.<pid>.<n>.tmp" (format/chunk_store.cpp).
bool chunk_temporary(const std::string& name) {
  ChunkRef c;
  return name.size() > 38 && name[0] == '.' && name[33] == '.' && name.ends_with(".tmp") &&
         parse_chunk_hash(std::string_view(name).substr(1, 32), c);
}

// The chunk files of the capture's own chunks/ that no region of `m` names, and chunk
// temporaries: what a prune left when it was killed (between writing its manifest and deleting
// them, or while writing a chunk). Only under prune's exclusive lock: nothing else writes into
// a published capture's chunks/ (a shared store is never cleaned: other captures use it).
std::vector<std::string> unreferenced_chunks(const fs::path& dir, const Manifest& m) {
  std::set<std::pair<uint64_t, uint64_t>> used;
  for (const auto& r : m.regions)
    for (const auto& ch : r.chunks) used.insert({ch.hash_hi, ch.hash_lo});
  std::vector<std::string> unused;
  std::error_code ec;
  for (fs::directory_iterator it(dir / kChunkDir, ec), end; !ec && it != end; it.increment(ec)) {
    std::pair<uint64_t, uint64_t> key;
    const std::string name = it->path().filename().string();
    if ((chunk_name(name, &key) && !used.count(key)) || chunk_temporary(name)) unused.push_back(name);
  }
  return unused;
}

// A linear or pitch2D texture reads the region: the footprint does not see texture fetches.
bool read_through_texture(const Manifest& m, const Region& r) {
  for (const auto& o : m.textures.objects)
    if ((o.resource == ResourceType::Linear || o.resource == ResourceType::Pitch2D) && r.kind != MemKind::Array &&
        o.address >= r.base && o.address - r.base < r.size)
      return true;
  return false;
}

}  // namespace

bool PrunePlan::changed() const {
  return std::any_of(regions.begin(), regions.end(), [](const RegionPrune& r) { return r.changed; });
}

PrunePlan plan_prune(const Manifest& m, const Footprint& f) {
  if (f.regions.size() != m.regions.size())
    input_error(fmt::format("the footprint describes {} regions but the capture has {}; measure it again with "
                            "`kerncap footprint OUT --force`",
                            f.regions.size(), m.regions.size()));
  PrunePlan p;
  // Accesses the sanitizer cannot see (TMA bulk copies) showed up in a probed region: then a
  // region with no recorded access at all may still be read by them.
  const bool unseen_accesses = std::any_of(f.regions.begin(), f.regions.end(), [](const auto& r) { return r.probed; });
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const Region& r = m.regions[i];
    const RegionFootprint& fr = f.regions[i];
    if (fr.id != r.id || fr.size != r.size)
      input_error(fmt::format("footprint region {} does not match capture region {} (id or size); measure it again "
                              "with `kerncap footprint OUT --force`",
                              fr.id, r.id));
    RegionPrune rp;
    rp.id = r.id;
    const Ranges old_stored = r.stored ? *r.stored : Ranges{{0, r.size}};
    rp.stored = old_stored;
    rp.pruned = r.pruned;
    rp.stored_before = rp.stored_after = total(old_stored);
    if (r.omitted) {
      rp.kept_whole = "omitted by the closure (nothing stored)";
    } else if (read_through_texture(m, r)) {
      rp.kept_whole = "read through a texture (texture reads are not in the footprint); kept";
    } else if (r.kind == MemKind::Array) {
      // Read through the texture unit or written through surfaces: the sanitizer sees neither.
      rp.kept_whole = "a CUDA array (its texture and surface accesses are not in the footprint); kept";
    } else if (fr.probed) {
      // Its writes were found by poisoning: the sanitizer saw none of its accesses, so its
      // reads (TMA bulk copies) are unknown.
      rp.kept_whole = "the footprint could not see its accesses (TMA); kept";
    } else if (unseen_accesses && fr.read.count() == 0 && fr.written.count() == 0) {
      rp.kept_whole = "no access recorded, but the launch makes accesses the footprint cannot see (TMA); kept";
    } else {
      const Ranges keep = keep_ranges(fr, r.size);
      rp.stored = intersect(old_stored, keep);
      Ranges pruned = complement(keep, r.size);
      pruned.insert(pruned.end(), r.pruned.begin(), r.pruned.end());
      rp.pruned = normalized(std::move(pruned));
      rp.stored_after = total(rp.stored);
      rp.changed = !same(rp.stored, old_stored) || !same(rp.pruned, r.pruned);
    }
    p.stored_before += rp.stored_before;
    p.stored_after += rp.stored_after;
    p.pruned_after += total(rp.pruned);
    p.regions.push_back(std::move(rp));
  }
  return p;
}

PruneResult prune_capture(const std::filesystem::path& dir_in, bool dry_run) {
  // Prune rewrites a capture in place and unlinks chunk files: never through a symbolic link,
  // which may lead to another capture (issue 38's fuzz run: `OUT/capture` linked to another
  // capture had that one's manifest rewritten and 36 of its chunks unlinked).
  {
    const std::filesystem::path named =
        dir_in.filename() == kCaptureDirName ? dir_in : dir_in / kCaptureDirName;
    std::error_code ec;
    if (std::filesystem::is_symlink(named, ec))
      input_error(fmt::format("{} is a symbolic link (to {}): prune rewrites a capture in place and does not follow "
                              "links; run it on the capture's own directory",
                              named.string(), std::filesystem::read_symlink(named, ec).string()));
  }
  // Exclusive: no reader may hold the manifest this rewrites or the chunks this deletes, and a
  // second prune waits for this one (then finds nothing left to prune).
  const Capture c = dry_run ? open_capture(dir_in) : open_capture_exclusive(dir_in, default_store());
  if (!footprint_exists(c.dir))
    input_error(fmt::format("{} has no footprint, so kerncap cannot tell which bytes the launch never touches: "
                            "measure it first with `kerncap footprint OUT`, then prune",
                            c.dir.string()));
  const Footprint f = read_footprint(c.dir, &c.manifest);
  PruneResult res;
  res.plan = plan_prune(c.manifest, f);
  res.external_store = c.manifest.external_store;
  const PrunePlan& p = res.plan;
  std::string& s = res.summary;
  for (size_t i = 0; i < p.regions.size(); ++i) {
    const RegionPrune& rp = p.regions[i];
    const Region& r = c.manifest.regions[i];
    if (!rp.kept_whole.empty()) {
      s += fmt::format("  region {:>4} {:>10}: {}\n", r.id, human_bytes(r.size), rp.kept_whole);
      continue;
    }
    s += fmt::format("  region {:>4} {:>10}: stored {} -> {}, {} untouched{}\n", r.id, human_bytes(r.size),
                     human_bytes(rp.stored_before), human_bytes(rp.stored_after), human_bytes(total(rp.pruned)),
                     rp.changed ? "" : " (unchanged)");
  }
  s += fmt::format("{} stored bytes: {} -> {} ({} dropped); {} replayed as 0x{:02X} (never touched by the launch)\n",
                   dry_run ? "would prune" : "pruned", human_bytes(p.stored_before), human_bytes(p.stored_after),
                   human_bytes(p.stored_before - p.stored_after), human_bytes(p.pruned_after), kOmittedFill);
  auto remove_counted = [&](const fs::path& parent, const std::string& name) {
    struct stat sb {};
    if (::lstat((parent / name).c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) return;
    files::remove_inside(parent, name);
    ++res.files_deleted;
    res.bytes_reclaimed += static_cast<uint64_t>(sb.st_size);
  };
  if (dry_run || !p.changed()) {
    if (!p.changed()) s += "nothing to prune: the capture already holds only what the launch touches\n";
    if (!dry_run && !c.manifest.external_store) {
      // A prune killed after its manifest and before its deletions (issue 38's fault matrix)
      // left chunk files nothing names; they go now.
      for (const auto& name : unreferenced_chunks(c.dir, c.manifest)) remove_counted(c.dir / kChunkDir, name);
      if (res.files_deleted)
        s += fmt::format("{} chunk files no longer referenced (left by an interrupted prune) removed ({} reclaimed)\n",
                         res.files_deleted, human_bytes(res.bytes_reclaimed));
    }
    return res;
  }
  if (c.manifest.external_store && !c.store)
    input_error("this capture keeps its BEFORE memory in a shared chunk store: name it with --store DIR");

  // Steps 1 and 2 change nothing a reader sees until the manifest's rename: a write that fails
  // (a full disk, issue 38's fault matrix) leaves the capture as it was, and the error says so.
  Manifest nm = c.manifest;
  std::vector<std::string> old_files;
  try {
    // 1. The kept bytes of every changed region, as chunks (those equal to existing chunks are
    //    not written again).
    nm.format_version = format_version_for(nm);
    ChunkWriter::Options o;
    o.dir = c.manifest.external_store ? *c.store : c.dir / kChunkDir;
    ChunkWriter w(o);
    std::vector<std::vector<size_t>> tickets(p.regions.size());
    std::vector<uint8_t> buf(kChunkWindow);
    for (size_t i = 0; i < p.regions.size(); ++i) {
      const RegionPrune& rp = p.regions[i];
      if (!rp.changed) continue;
      const Region& r = c.manifest.regions[i];
      RegionBytes in(c, r);
      RegionChunker chunker(w);
      std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> h(XXH64_createState(), &XXH64_freeState);
      XXH64_reset(h.get(), 0);
      for (const auto& run : rp.stored)
        for (uint64_t off = run.offset; off < run.offset + run.size;) {
          const uint64_t n = std::min<uint64_t>(buf.size(), run.offset + run.size - off);
          in.read_at(off, buf.data(), n);
          chunker.add(off, buf.data(), n);
          XXH64_update(h.get(), buf.data(), n);
          off += n;
        }
      tickets[i] = chunker.finish();
      Region& nr = nm.regions[i];
      nr.xxh64 = XXH64_digest(h.get());
      nr.stored = rp.stored;
      nr.pruned = rp.pruned;
      if (!r.file.empty()) old_files.push_back(r.file);
      nr.file.clear();
    }
    w.finish();
    for (size_t i = 0; i < p.regions.size(); ++i) {
      if (!p.regions[i].changed) continue;
      nm.regions[i].chunks.clear();
      for (size_t t : tickets[i]) nm.regions[i].chunks.push_back(w.ref(t));
    }
    check_manifest(nm);
    const ChunkStats st = w.stats();
    res.chunks_written = st.written;
    res.bytes_written = st.written_bytes;

    // 2. The new manifest replaces the old one in one rename.
    write_json_atomic(c.dir / kManifestName, to_json(nm));

  } catch (const Error& e) {
    fail(e.kind(), fmt::format("prune stopped before it changed the capture: {}; {} is as it was{}", e.what(),
                               c.dir.string(),
                               c.manifest.external_store ? " and the shared store keeps every chunk it had" : ""));
  }

  // 3. Files nothing references any more: the rewritten regions' old files, and chunks of
  //    the capture's own chunks/ (a shared store is never cleaned: other captures use it).
  for (const auto& old : old_files) {
    const fs::path rel(old);
    remove_counted(c.dir / rel.parent_path(), rel.filename().string());
  }
  if (!nm.external_store)
    for (const auto& name : unreferenced_chunks(c.dir, nm)) remove_counted(c.dir / kChunkDir, name);
  s += fmt::format("{} new chunks written ({}); {} files no longer referenced removed ({} reclaimed){}\n",
                   res.chunks_written, human_bytes(res.bytes_written), res.files_deleted,
                   human_bytes(res.bytes_reclaimed),
                   nm.external_store ? "; the shared store keeps every chunk (other captures may use them)" : "");
  return res;
}

}  // namespace kerncap::format
