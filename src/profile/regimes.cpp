#include "profile/regimes.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace kerncap::profile {
namespace {

using Position = std::tuple<uint32_t, uint32_t, uint32_t>;  // slot, offset, size
// Shape, whether the launch was signed, and the signature's words in the key.
using Key = std::tuple<std::array<int32_t, 3>, std::array<int32_t, 3>, std::array<uint32_t, 3>, int32_t, bool,
                       std::vector<format::ScalarWord>>;

uint64_t duration(const format::KernelRecord& k) { return k.end_ns > k.start_ns ? k.end_ns - k.start_ns : 0; }

Position position(const format::ScalarWord& w) { return {w.slot, w.offset, w.size}; }

// The words of `launches`' signatures that cannot key a regime: more than kMaxWordValues
// values, or an address-like value at least once (position -> whether that was the reason).
std::map<Position, bool> volatile_positions(const format::ProcessRecords& p, const std::vector<size_t>& launches) {
  std::map<Position, std::set<uint64_t>> values;
  std::set<Position> addresses;
  std::set<int32_t> seen;
  for (size_t i : launches) {
    const int32_t sig = p.kernels[i].signature;
    if (sig < 0 || static_cast<size_t>(sig) >= p.signatures.size() || !seen.insert(sig).second) continue;
    for (const format::ScalarWord& w : p.signatures[sig]) {
      if (w.size == 8 && address_like(w.value)) addresses.insert(position(w));
      std::set<uint64_t>& v = values[position(w)];
      if (v.size() <= kMaxWordValues) v.insert(w.value);  // bounded: one past the limit is enough
    }
  }
  std::map<Position, bool> out;
  for (const Position& pos : addresses) out[pos] = true;
  for (const auto& [pos, v] : values)
    if (v.size() > kMaxWordValues) out.try_emplace(pos, false);
  return out;
}

// Marks the words that do not hold one value over all signed regimes.
void mark_varying(std::vector<Regime>& regimes) {
  std::map<Position, std::pair<uint64_t, size_t>> first;  // value in the first regime that has it, regimes having it so
  std::set<Position> differs;
  size_t signed_regimes = 0;
  for (const Regime& r : regimes) {
    if (!r.signed_launches) continue;
    ++signed_regimes;
    for (const format::RegimeParam& w : r.params) {
      auto [it, fresh] = first.emplace(Position{w.slot, w.offset, w.size}, std::pair{w.value, size_t{0}});
      ++it->second.second;
      if (!fresh && it->second.first != w.value) differs.insert(it->first);
    }
  }
  for (Regime& r : regimes)
    for (format::RegimeParam& w : r.params) {
      const Position pos{w.slot, w.offset, w.size};
      w.varies = differs.count(pos) || first.at(pos).second != signed_regimes;
    }
}

std::string position_text(const VolatileWord& w) {
  return w.offset ? fmt::format("param {}+{}", w.slot, w.offset) : fmt::format("param {}", w.slot);
}

}  // namespace

RegimeSet find_regimes(const std::vector<format::ProcessRecords>& processes, const std::string& mangled, size_t max) {
  RegimeSet out;
  out.mangled = mangled;
  const format::ProcessRecords* chosen = nullptr;
  uint32_t id = 0;
  for (const auto& p : processes) {
    const auto it = std::find(p.names.begin(), p.names.end(), mangled);
    if (it == p.names.end()) continue;
    const auto n = static_cast<uint32_t>(it - p.names.begin());
    const bool launched = std::any_of(p.kernels.begin(), p.kernels.end(), [&](const format::KernelRecord& k) {
      return k.name_id == n && !k.device_launched && !k.benchmark;
    });
    if (!launched) continue;
    if (chosen) {
      ++out.other_processes;
      continue;
    }
    chosen = &p;
    id = n;
  }
  if (!chosen) return out;
  const format::ProcessRecords& p = *chosen;
  out.pid = p.info.pid;

  // Launch order as extract counts it (aggregate.cpp's dispatch_indices): correlation id,
  // then graph node within one graph launch.
  std::vector<size_t> order;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const format::KernelRecord& k = p.kernels[i];
    out.app_time_ns += duration(k);
    if (k.name_id != id) continue;
    if (k.device_launched || k.benchmark) {
      ++out.uncounted;
      continue;
    }
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const format::KernelRecord &ka = p.kernels[a], &kb = p.kernels[b];
    if (ka.correlation != kb.correlation) return ka.correlation < kb.correlation;
    if (ka.graph_id && kb.graph_id && ka.graph_node != kb.graph_node) return ka.graph_node < kb.graph_node;
    return ka.start_ns < kb.start_ns;
  });

  // The signatures' words that cannot key a regime, and each signature's key words.
  const std::map<Position, bool> volatile_words = volatile_positions(p, order);
  for (const auto& [pos, address] : volatile_words)
    out.volatile_words.push_back({std::get<0>(pos), std::get<1>(pos), std::get<2>(pos), address});
  std::map<int32_t, std::vector<format::ScalarWord>> key_words;
  auto words_of = [&](int32_t sig) -> const std::vector<format::ScalarWord>& {
    auto [it, fresh] = key_words.try_emplace(sig);
    if (fresh)
      for (const format::ScalarWord& w : p.signatures[sig])
        if (!volatile_words.count(position(w))) it->second.push_back(w);
    return it->second;
  };

  std::map<Key, size_t> index;
  std::vector<Regime> all;
  static const std::vector<format::ScalarWord> kNoWords;
  for (size_t d = 0; d < order.size(); ++d) {
    const format::KernelRecord& k = p.kernels[order[d]];
    const bool is_signed = k.signature >= 0 && static_cast<size_t>(k.signature) < p.signatures.size();
    const std::vector<format::ScalarWord>& words = is_signed ? words_of(k.signature) : kNoWords;
    if (!is_signed) ++out.unsigned_launches;
    auto [it, fresh] = index.emplace(Key{k.grid, k.block, k.cluster, k.dynamic_shared, is_signed, words}, all.size());
    if (fresh) {
      Regime r;
      r.grid = k.grid;
      r.block = k.block;
      r.cluster = k.cluster;
      r.dynamic_shared = k.dynamic_shared;
      r.dispatch = d;
      r.first_ns = k.start_ns;
      r.signed_launches = is_signed;
      for (const format::ScalarWord& w : words) r.params.push_back({w.slot, w.offset, w.size, w.value, false});
      all.push_back(std::move(r));
    }
    Regime& r = all[it->second];
    ++r.launches;
    r.time_ns += duration(k);
    ++out.launches;
    out.time_ns += duration(k);
  }
  mark_varying(all);
  for (Regime& r : all) r.share = out.time_ns ? static_cast<double>(r.time_ns) / static_cast<double>(out.time_ns) : 0;
  // Largest share first; equal shares in the order the application met them.
  std::stable_sort(all.begin(), all.end(), [](const Regime& a, const Regime& b) { return a.time_ns > b.time_ns; });
  for (size_t i = 0; i < all.size(); ++i) {
    if (i < max) {
      out.regimes.push_back(all[i]);
      continue;
    }
    ++out.dropped;
    out.dropped_launches += all[i].launches;
    out.dropped_ns += all[i].time_ns;
  }
  return out;
}

std::vector<std::string> signature_notes(const RegimeSet& set) {
  std::vector<std::string> notes;
  std::string many, addresses;
  for (const VolatileWord& w : set.volatile_words) {
    std::string& list = w.address ? addresses : many;
    list += (list.empty() ? "" : ", ") + position_text(w);
  }
  if (!many.empty())
    notes.push_back(fmt::format("{} took more than {} values over its launches: left out of the regimes' key (a "
                                "counter, a seed, or a size that changes at every launch)",
                                many, kMaxWordValues));
  if (!addresses.empty())
    notes.push_back(fmt::format("{} held a host-address-like value (uninitialized padding beside a 32-bit field, or a "
                                "host pointer): left out of the regimes' key, since it differs from run to run",
                                addresses));
  if (set.launches && set.unsigned_launches == set.launches)
    notes.push_back("no launch had a parameter signature (launched from CUDA graphs, or named by no --regimes "
                    "pattern): its regimes are its launch shapes");
  else if (set.unsigned_launches)
    notes.push_back(fmt::format("{} of its {} launches had no parameter signature (launched from CUDA graphs): they "
                                "are grouped by launch shape alone",
                                set.unsigned_launches, set.launches));
  return notes;
}

bool address_like(uint64_t value) { return value >= (uint64_t{1} << 40) && value < (uint64_t{1} << 47); }

bool differs_between_runs_only(uint64_t profiled, uint64_t captured) {
  const uint64_t hi_p = profiled >> 32, hi_c = captured >> 32;
  return hi_p != 0 && hi_c != 0 && hi_p != hi_c;
}

std::string params_mismatch(const std::vector<format::RegimeParam>& params, const std::vector<format::ParamSlot>& slots,
                            const std::vector<uint8_t>& buffer, std::vector<format::RegimeParam>* unstable) {
  for (const format::RegimeParam& w : params) {
    if (w.slot >= slots.size())
      return fmt::format("the captured launch has {} parameter(s), the profiled one at least {}", slots.size(),
                         w.slot + 1);
    const format::ParamSlot& s = slots[w.slot];
    const uint64_t at = uint64_t{s.offset} + w.offset;
    if (uint64_t{w.offset} + w.size > s.size || at + w.size > buffer.size())
      return fmt::format("{} does not fit the captured launch's parameter {} ({} bytes)",
                         format::param_word_text(w), w.slot, s.size);
    uint64_t value = 0;
    for (uint32_t b = 0; b < w.size; ++b) value |= uint64_t{buffer[at + b]} << (8 * b);
    if (value != w.value) {
      format::RegimeParam got = w;
      got.value = value;
      if (!w.varies || s.size > 8 || (w.size == 8 && differs_between_runs_only(w.value, value))) {
        if (unstable) unstable->push_back(got);
        continue;
      }
      return fmt::format("{} in the profiled run, {} in the captured one", format::param_word_text(w),
                         format::param_word_text(got));
    }
  }
  return "";
}

}  // namespace kerncap::profile
