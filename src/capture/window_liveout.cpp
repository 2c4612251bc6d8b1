#include "capture/window_liveout.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "names/demangle.hpp"

namespace kerncap::capture {

LiveOutObserver::LiveOutObserver(std::vector<WindowChanged> changed, uint64_t horizon) : horizon_(horizon) {
  for (auto& c : changed) {
    Entry e{std::move(c)};
    if (!e.r.observable) {
      e.state = State::Read;
      e.evidence = e.r.evidence;
      e.reads_complete = false;
    }
    entries_.push_back(std::move(e));
  }
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.r.base < b.r.base; });
}

LiveOutObserver::Entry* LiveOutObserver::find(uint64_t address) {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](uint64_t a, const Entry& e) { return a < e.r.base; });
  if (it == entries_.begin()) return nullptr;
  --it;
  return address - it->r.base < it->r.size ? &*it : nullptr;
}

void LiveOutObserver::note_read(Entry& e, uint64_t offset, uint64_t size) {
  if (e.closed || e.state == State::Dead || !e.reads_complete) return;
  const std::pair<uint64_t, uint64_t> r{offset, size};
  if (std::find(e.reads.begin(), e.reads.end(), r) != e.reads.end()) return;
  if (e.reads.size() >= format::kMaxLiveOutReads) {
    e.reads_complete = false;
    e.reads.clear();
    return;
  }
  e.reads.push_back(r);
}

void LiveOutObserver::read(Entry& e, const std::string& evidence) {
  if (e.state != State::Unknown) return;
  e.state = State::Read;
  e.evidence = evidence;
}

bool LiveOutObserver::on_launch(const std::string& name, uint64_t launch_index, std::span<const uint8_t> params) {
  if (over()) return true;
  ++launches_;
  for (size_t off = 0; off + 8 <= params.size(); off += 8) {
    uint64_t word = 0;
    std::memcpy(&word, params.data() + off, 8);
    Entry* e = find(word);
    if (!e) continue;
    note_read(*e, word - e->r.base, 1);
    if (e->state == State::Unknown)
      read(*e, fmt::format("reached by launch {} of {} (a pointer at parameter offset {}), {} launch(es) after the "
                           "window",
                           launch_index, names::demangle(name), off, launches_));
  }
  return over();
}

void LiveOutObserver::on_read(uint64_t src, uint64_t bytes, const std::string& what) {
  if (over() || !bytes) return;
  // Every region the range touches (a copy may span neighbouring allocations only in theory).
  for (auto& e : entries_) {
    if (!(src < e.r.base + e.r.size && e.r.base < src + bytes)) continue;
    const uint64_t lo = std::max(src, e.r.base), hi = std::min(src + bytes, e.r.base + e.r.size);
    note_read(e, lo - e.r.base, hi - lo);
    if (e.state == State::Unknown) read(e, fmt::format("read by {}, {} launch(es) after the window", what, launches_));
  }
}

void LiveOutObserver::on_write(uint64_t dst, uint64_t bytes, const std::string& what) {
  if (over() || !bytes) return;
  for (auto& e : entries_) {
    if (e.state == State::Read && dst <= e.r.base + e.r.changed_lo && e.r.base + e.r.changed_hi <= dst + bytes)
      e.closed = true;  // what is read from now on is no longer the window's
    if (e.state != State::Unknown) continue;
    // Only an overwrite of every byte the window changed kills it: a partial one leaves some
    // of the window's result to be read later.
    if (dst <= e.r.base + e.r.changed_lo && e.r.base + e.r.changed_hi <= dst + bytes) {
      e.state = State::Dead;
      e.evidence = fmt::format("overwritten by {} before anything read it, {} launch(es) after the window", what,
                               launches_);
    }
  }
}

void LiveOutObserver::on_opaque(const std::string& what) {
  if (over()) return;
  for (auto& e : entries_) {
    if (!e.closed && e.state != State::Dead) e.reads_complete = false;  // where it reads is not seen
    read(e, fmt::format("possibly read by {}, {} launch(es) after the window", what, launches_));
  }
}

format::WindowLiveOut LiveOutObserver::result(const std::string& ended) const {
  format::WindowLiveOut w;
  w.horizon = horizon_;
  w.launches_observed = launches_;
  w.ended = ended;
  std::vector<const Entry*> by_id;
  for (const auto& e : entries_) by_id.push_back(&e);
  std::sort(by_id.begin(), by_id.end(), [](const Entry* a, const Entry* b) { return a->r.id < b->r.id; });
  for (const Entry* e : by_id) {
    format::LiveOutRegion r;
    r.id = e->r.id;
    r.read = e->state == State::Read;
    r.reads_complete = e->reads_complete;
    if (r.reads_complete) r.reads = e->reads;
    r.evidence = e->state != State::Unknown ? e->evidence
                 : ended == "horizon"
                     ? fmt::format("not reached by the {} launch(es) observed after the window", launches_)
                     : fmt::format("not reached before the application ended ({} launch(es) after the window)",
                                   launches_);
    w.regions.push_back(std::move(r));
  }
  return w;
}

}  // namespace kerncap::capture
