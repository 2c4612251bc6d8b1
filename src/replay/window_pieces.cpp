#include "replay/window_pieces.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace kerncap::replay {

void add_pointer_cuts(std::span<const uint8_t> params, uint64_t base, uint64_t size, std::vector<uint64_t>* cuts) {
  for (size_t off = 0; off + 8 <= params.size(); off += 8) {
    uint64_t word = 0;
    std::memcpy(&word, params.data() + off, 8);
    if (word >= base && word - base < size) cuts->push_back(word - base);
  }
}

std::vector<std::vector<std::pair<uint64_t, uint64_t>>> split_runs_at_cuts(
    std::vector<std::pair<uint64_t, uint64_t>> runs, std::vector<uint64_t> cuts) {
  std::sort(runs.begin(), runs.end());
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> out;
  size_t group = SIZE_MAX;  // the span (number of cuts at or below) the last group holds
  for (auto [off, size] : runs) {
    while (size) {
      const auto next = std::upper_bound(cuts.begin(), cuts.end(), off);
      const size_t span = static_cast<size_t>(next - cuts.begin());
      const uint64_t n = next == cuts.end() ? size : std::min<uint64_t>(size, *next - off);
      if (span != group || out.empty()) {
        out.emplace_back();
        group = span;
      }
      out.back().push_back({off, n});
      off += n;
      size -= n;
    }
  }
  return out;
}

std::vector<uint64_t> writer_cuts(std::span<const WriterStretch> stretches, uint64_t min_span) {
  struct Joined {
    uint64_t end, bytes;  // the last changed byte + 1; changed bytes
    int32_t writer;
  };
  // Bytes no operation changed are left out, and neighbours of one writer joined across them.
  std::vector<Joined> joined;
  for (const WriterStretch& x : stretches) {
    if (x.writer < 0 || !x.bytes) continue;
    if (!joined.empty() && joined.back().writer == x.writer) {
      joined.back().end = x.offset + x.bytes;
      joined.back().bytes += x.bytes;
      continue;
    }
    joined.push_back({x.offset + x.bytes, x.bytes, x.writer});
  }
  // Short stretches join the one before them (the first has none: it stays), and so do
  // neighbours of its writer after them.
  std::vector<Joined> merged;
  for (const Joined& x : joined) {
    if (!merged.empty() && (x.bytes < min_span || x.writer == merged.back().writer)) {
      merged.back().end = x.end;
      merged.back().bytes += x.bytes;
      continue;
    }
    merged.push_back(x);
  }
  std::vector<uint64_t> cuts;
  for (size_t i = 1; i < merged.size(); ++i) cuts.push_back(merged[i - 1].end);
  return cuts;
}

LastWriters::LastWriters(uint64_t lo, std::vector<uint8_t> before)
    : lo_(lo), prev_(std::move(before)), writer_(prev_.size(), -1) {}

void LastWriters::after(int32_t op, std::span<const uint8_t> now) {
  const size_t n = std::min(now.size(), prev_.size());
  for (size_t at = 0; at < n; at += 4096) {  // whole pages compared first: most are unchanged
    const size_t len = std::min<size_t>(4096, n - at);
    if (std::memcmp(now.data() + at, prev_.data() + at, len) == 0) continue;
    for (size_t b = at; b < at + len; ++b)
      if (now[b] != prev_[b]) {
        writer_[b] = op;
        prev_[b] = now[b];
      }
  }
}

std::vector<WriterStretch> LastWriters::stretches(std::span<const std::pair<uint64_t, uint64_t>> runs,
                                                  size_t max_stretches) const {
  std::vector<WriterStretch> out;
  for (const auto& [offset, size] : runs) {
    if (offset < lo_) continue;
    const uint64_t end = std::min<uint64_t>(offset + size, lo_ + writer_.size());
    for (uint64_t b = offset; b < end; ++b) {
      const int32_t who = writer_[b - lo_];
      if (!out.empty() && out.back().writer == who && out.back().offset + out.back().bytes == b) {
        ++out.back().bytes;
        continue;
      }
      if (out.size() == max_stretches) return {};
      out.push_back({b, 1, who});
    }
  }
  return out;
}

std::vector<WindowPiece> window_pieces(uint64_t region_size, std::vector<std::pair<uint64_t, uint64_t>> changed,
                                       std::vector<uint64_t> cuts, const format::LiveOutRegion& observed) {
  std::sort(changed.begin(), changed.end());
  cuts.push_back(0);
  cuts.push_back(region_size);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  while (!cuts.empty() && cuts.back() > region_size) cuts.pop_back();

  // The pieces, and the span between cuts each one lies in.
  struct CutSpan {
    uint64_t lo, hi;
  };
  std::vector<WindowPiece> pieces;
  std::vector<CutSpan> spans;
  size_t run = 0;
  for (size_t c = 0; c + 1 < cuts.size(); ++c) {
    const uint64_t lo = cuts[c], hi = cuts[c + 1];
    while (run < changed.size() && changed[run].first + changed[run].second <= lo) ++run;
    uint64_t first = hi, last = lo;
    for (size_t r = run; r < changed.size() && changed[r].first < hi; ++r) {
      const uint64_t a = std::max(changed[r].first, lo), b = std::min(changed[r].first + changed[r].second, hi);
      if (a >= b) continue;
      first = std::min(first, a);
      last = std::max(last, b);
    }
    if (first >= last) continue;
    pieces.push_back({first, last - first, observed.read, observed.evidence});
    spans.push_back({lo, hi});
  }
  if (!observed.read || !observed.reads_complete) return pieces;  // decided as a whole

  std::vector<std::string> why(pieces.size());
  for (auto& p : pieces) p.read = false;
  for (const auto& [o, n] : observed.reads) {
    const uint64_t end = o + std::max<uint64_t>(n, 1);
    bool hit = false;
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (!(o < spans[i].hi && spans[i].lo < end)) continue;
      hit = true;
      if (!pieces[i].read) why[i] = fmt::format("reached at region offset {:#x} after the window", o);
      pieces[i].read = true;
    }
    if (!hit)  // where the window changed nothing between two cuts: a kernel reads forward, into the next piece
      for (size_t i = 0; i < pieces.size(); ++i)
        if (pieces[i].offset >= o) {
          if (!pieces[i].read)
            why[i] = fmt::format("reached at region offset {:#x} after the window, before it (a kernel reads forward)", o);
          pieces[i].read = true;
          break;
        }
  }
  for (size_t i = 0; i < pieces.size(); ++i)
    pieces[i].evidence = pieces[i].read ? why[i]
                                        : fmt::format("not reached after the window: the region was ({}), at {} other "
                                                      "place(s), none in bytes {:#x}..{:#x}",
                                                      observed.evidence, observed.reads.size(), pieces[i].offset,
                                                      pieces[i].offset + pieces[i].size);
  return pieces;
}

}  // namespace kerncap::replay
