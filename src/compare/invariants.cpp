// Invariants of a replay's written bytes: scanning values and turning counts into violations.
#include "compare/invariants.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "common/error.hpp"
#include "compare/element.hpp"
#include "compare/floats.hpp"

namespace kerncap::compare {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

void count(uint64_t& n, std::optional<uint64_t>& first, uint64_t index) {
  if (n++ == 0 || index < *first) first = index;
}

template <typename F>
void scan_float(ValueCounts& c, const uint8_t* data, uint64_t elems, uint64_t first_index) {
  using Bits = typename F::Bits;
  for (uint64_t k = 0; k < elems; ++k) {
    const Bits b = load<Bits>(data + k * sizeof(Bits));
    const uint64_t i = first_index + k;
    if (F::special(b)) {
      if (F::nan(b)) {
        count(c.nan, c.first_nan, i);
        continue;
      }
      if (F::inf(b)) count(c.inf, c.first_inf, i);
    }
    if (F::value(b) < 0) count(c.negative, c.first_negative, i);  // -0 is not below zero; -Inf is
  }
}

template <typename T>
void scan_signed(ValueCounts& c, const uint8_t* data, uint64_t elems, uint64_t first_index) {
  for (uint64_t k = 0; k < elems; ++k)
    if (load<T>(data + k * sizeof(T)) < 0) count(c.negative, c.first_negative, first_index + k);
}

std::string where(const RegionFacts& r, const ValueCounts& p) {
  return fmt::format("region {} ({} at +{:#x})", r.id, to_string(p.dtype), p.begin);
}

}  // namespace

Invariants parse_invariant_list(const std::string& list) {
  Invariants inv;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    const std::string name = trim(item);
    if (name == "no_nan") inv.no_nan = true;
    else if (name == "no_inf") inv.no_inf = true;
    else if (name == "non_negative") inv.non_negative = true;
    else if (name == "must_write") inv.must_write = true;
    else if (!name.empty())
      usage_error(fmt::format("--invariant {}: unknown invariant (known: no_nan, no_inf, non_negative, must_write)",
                              name));
  }
  return inv;
}

std::string to_string(const Invariants& inv) {
  std::string s;
  for (auto [on, name] : {std::pair{inv.no_nan, "no_nan"}, std::pair{inv.no_inf, "no_inf"},
                          std::pair{inv.non_negative, "non_negative"}, std::pair{inv.must_write, "must_write"}})
    if (on) s += s.empty() ? name : fmt::format(", {}", name);
  return s.empty() ? "none" : s;
}

bool has_nan(DType t) { return is_float(t); }
bool has_inf(DType t) { return is_float(t) && t != DType::F8E4M3; }
bool has_sign(DType t) {
  switch (t) {
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64: return true;
    default: return is_float(t);
  }
}

ValueScanner::ValueScanner(DType dtype, uint64_t piece_begin) {
  counts_.dtype = dtype;
  counts_.begin = piece_begin;
}

void ValueScanner::feed(const uint8_t* data, uint64_t n, uint64_t offset) {
  const unsigned size = dtype_size(counts_.dtype);
  const uint64_t elems = n / size, first = offset / size;
  counts_.elements += elems;
  switch (counts_.dtype) {
    case DType::F64: return scan_float<floats::F64>(counts_, data, elems, first);
    case DType::F32: return scan_float<floats::F32>(counts_, data, elems, first);
    case DType::F16: return scan_float<floats::F16>(counts_, data, elems, first);
    case DType::BF16: return scan_float<floats::BF16>(counts_, data, elems, first);
    case DType::F8E4M3: return scan_float<floats::E4M3>(counts_, data, elems, first);
    case DType::F8E5M2: return scan_float<floats::E5M2>(counts_, data, elems, first);
    case DType::I8: return scan_signed<int8_t>(counts_, data, elems, first);
    case DType::I16: return scan_signed<int16_t>(counts_, data, elems, first);
    case DType::I32: return scan_signed<int32_t>(counts_, data, elems, first);
    case DType::I64: return scan_signed<int64_t>(counts_, data, elems, first);
    default: return;  // bytes and unsigned integers: nothing to count
  }
}

std::vector<std::pair<uint64_t, uint64_t>> element_ranges(uint64_t begin, uint64_t end, unsigned size,
                                                          const std::vector<std::pair<uint64_t, uint64_t>>& runs) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  uint64_t done = begin;  // elements before this are taken
  for (const auto& [rb, re] : runs) {
    uint64_t b = std::max(rb, begin), e = std::min(re, end);
    if (b >= e) continue;
    b = std::max(done, begin + (b - begin) / size * size);
    e = std::min(end, begin + (e - begin + size - 1) / size * size);
    if (b >= e) continue;
    if (!out.empty() && out.back().second == b) out.back().second = e;  // adjacent: one range
    else out.emplace_back(b, e);
    done = e;
  }
  return out;
}

InvariantReport check_invariants(const Invariants& inv, std::vector<RegionFacts> regions) {
  InvariantReport rep;
  rep.checked = inv;
  rep.regions = std::move(regions);
  uint64_t written = 0;
  for (const RegionFacts& r : rep.regions) written += r.written;

  struct Check {
    bool on;
    const char* name;
    const char* what;
    bool (*applies)(DType);
    uint64_t ValueCounts::*n;
    std::optional<uint64_t> ValueCounts::*first;
  };
  const Check checks[] = {
      {inv.no_nan, "no_nan", "NaN", has_nan, &ValueCounts::nan, &ValueCounts::first_nan},
      {inv.no_inf, "no_inf", "Inf", has_inf, &ValueCounts::inf, &ValueCounts::first_inf},
      {inv.non_negative, "non_negative", "negative", has_sign, &ValueCounts::negative, &ValueCounts::first_negative},
  };
  for (const RegionFacts& r : rep.regions) {
    if (!r.written && !r.known_written) continue;
    for (const ValueCounts& p : r.pieces) {
      if (!p.elements) continue;
      std::string not_applicable;
      for (const Check& c : checks) {
        if (!c.on) continue;
        if (!c.applies(p.dtype)) {
          not_applicable += not_applicable.empty() ? c.name : fmt::format(", {}", c.name);
          continue;
        }
        const uint64_t n = p.*c.n;
        if (!n) continue;
        const uint64_t i = *(p.*c.first);
        const uint64_t off = p.begin + i * dtype_size(p.dtype);
        rep.violations.push_back({c.name, r.id, n, i, off, to_string(p.dtype),
                                  fmt::format("{}: {}: {} {} of {} written element(s), first at element {} (byte "
                                              "+{:#x})",
                                              c.name, where(r, p), n, c.what, p.elements, i, off)});
      }
      if (!not_applicable.empty())
        rep.notes.push_back(fmt::format("{}: {} not applicable to {}{}", where(r, p), not_applicable,
                                        to_string(p.dtype),
                                        p.dtype == DType::Bytes ? " (no element type known: give --dtype, "
                                                                  "OUT/compare.json spans or typed pointer parameters)"
                                                                : ""));
    }
  }

  if (inv.must_write) {
    if (!written) {
      rep.violations.push_back(
          {"must_write", std::nullopt, 0, std::nullopt, std::nullopt, "",
           "must_write: the application's launch changed no byte of any captured region, so this capture proves "
           "nothing about what the kernel writes; capture a later dispatch (`kerncap extract ... --dispatch N`) "
           "whose launch changes its outputs"});
    }
    for (const RegionFacts& r : rep.regions) {
      if (!r.written || r.replay_changed) continue;
      rep.violations.push_back({"must_write", r.id, r.written, std::nullopt, std::nullopt, "",
                                fmt::format("must_write: region {}: the application's launch changed {} byte(s) "
                                            "here and the replay changed none of them",
                                            r.id, r.written)});
    }
  }
  return rep;
}

std::string InvariantReport::line() const {
  if (pass()) {
    uint64_t n = 0;
    for (const RegionFacts& r : regions) n += r.written || r.known_written ? 1 : 0;
    return fmt::format("Invariants: PASS ({}; {} written region(s))", to_string(checked), n);
  }
  return fmt::format("Invariants: FAIL ({} violation(s) of {})", violations.size(), to_string(checked));
}

}  // namespace kerncap::compare
