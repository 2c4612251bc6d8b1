#include "replay/validate.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/hex.hpp"
#include "replay/compare_spec.hpp"

namespace kerncap::replay {

namespace {

// The expected bytes of region `r` in [off, off + n): BEFORE with the AFTER runs applied and
// pointer words into moved spans rewritten. Read with the 8-byte-aligned words around it, so
// a word that straddles a piece or chunk edge is rewritten exactly as restore() rewrote it.
class Expected {
 public:
  Expected(const format::Capture& c, const format::Region& r, const RelocationMap& reloc, uint8_t* buffer)
      : r_(r), reloc_(reloc), buffer_(buffer), before_(c.dir, r.file, "BEFORE memory"),
        after_(c.dir, c.manifest.after_file, "AFTER memory") {
    for (const auto& a : c.manifest.after)
      if (a.region == r.id) runs_.push_back(&a);
  }
  // Largest n for a buffer of `capacity` bytes (the window adds at most 7 bytes each side).
  static uint64_t step(uint64_t capacity) { return (capacity - 16) / 64 * 64; }

  const uint8_t* at(uint64_t off, uint64_t n) {
    const uint64_t lo = std::max(r_.base, (r_.base + off) / 8 * 8) - r_.base;
    const uint64_t hi = std::min(r_.base + r_.size, (r_.base + off + n + 7) / 8 * 8) - r_.base;
    before_.read_at(lo, buffer_, hi - lo);
    for (const auto* a : runs_) {
      const uint64_t b = std::max(lo, a->offset), e = std::min(hi, a->offset + a->size);
      if (b < e) after_.read_at(a->file_offset + (b - a->offset), buffer_ + (b - lo), e - b);
    }
    reloc_.rewrite(buffer_, hi - lo, r_.base + lo);
    return buffer_ + (off - lo);
  }

 private:
  const format::Region& r_;
  const RelocationMap& reloc_;
  uint8_t* buffer_;
  format::BlobReader before_, after_;
  std::vector<const format::AfterRun*> runs_;
};

}  // namespace

Verdict compare_with_after(Session& session, const CompareSpec& spec) {
  const format::Manifest& m = session.capture().manifest;
  auto* actual = static_cast<uint8_t*>(session.staging(1));
  const uint64_t step = Expected::step(session.staging_bytes());  // whole elements of every type
  Verdict v;
  v.spec_source = spec.source;
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const format::Region& r = m.regions[i];
    RegionVerdict rv{r.id, format::to_string(r.kind), r.base, r.size, 0, {}, {}};
    for (const auto& a : m.after)
      if (a.region == r.id) rv.written += a.size;
    Expected expected(session.capture(), r, session.relocations(), static_cast<uint8_t*>(session.staging(0)));
    for (const Piece& p : pieces_of(r, spec)) {
      // Offsets fed to the comparator are piece-relative: a piece may start anywhere in the
      // region, and elements are counted from its start.
      compare::Comparator cmp(p.dtype, p.tol);
      for (uint64_t off = p.begin; off < p.end;) {
        const uint64_t n = std::min(step, p.end - off);
        const uint8_t* e = expected.at(off, n);
        KC_CU(cuMemcpyDtoH(actual, session.address(i) + off, n));
        cmp.feed(e, actual, n, off - p.begin);
        off += n;
      }
      PieceVerdict pv{p, cmp.result()};
      if (pv.result.first_bad_offset) *pv.result.first_bad_offset += p.begin;
      compare::merge(rv.result, pv.result);
      rv.pieces.push_back(std::move(pv));
    }
    v.regions.push_back(std::move(rv));
  }
  return v;
}

std::string RegionVerdict::summary() const {
  if (pieces.size() <= 1) return compare::summary(result);
  std::string s;
  for (const auto& p : pieces) {
    if (p.result.pass()) continue;
    s += fmt::format("{}{} at +{:#x} ({}): {}", s.empty() ? "" : "; ", compare::to_string(p.piece.dtype),
                     p.piece.begin, human_bytes(p.piece.end - p.piece.begin), compare::summary(p.result));
  }
  return s.empty() ? compare::summary(result) : s;
}

bool Verdict::pass() const { return failing() == 0; }

uint64_t Verdict::failing() const {
  return static_cast<uint64_t>(std::count_if(regions.begin(), regions.end(), [](auto& r) { return !r.result.pass(); }));
}

uint64_t Verdict::exact() const {
  return static_cast<uint64_t>(std::count_if(regions.begin(), regions.end(), [](auto& r) { return r.result.exact(); }));
}

uint64_t Verdict::written() const {
  uint64_t n = 0;
  for (const auto& r : regions) n += r.written;
  return n;
}

std::string Verdict::line() const {
  uint64_t written_regions = 0;
  double worst_abs = 0, worst_rel = 0;
  for (const auto& r : regions) {
    if (r.written) ++written_regions;
    worst_abs = std::max(worst_abs, r.result.max_abs_error);
    worst_rel = std::max(worst_rel, r.result.max_rel_error);
  }
  std::string nondet;
  if (!nondeterministic.empty())
    nondet = fmt::format("nondeterministic kernel: two replays of the captured image differ in {} region(s), "
                         "compared within their element types' tolerance (max abs error {:.3g}, max rel error "
                         "{:.3g}); ",
                         nondeterministic.size(), worst_abs, worst_rel);
  if (!pass()) return fmt::format("Result: FAIL ({}{} of {} regions differ)", nondet, failing(), regions.size());
  const std::string how = exact() == regions.size() ? "byte-exact" : "within tolerance";
  if (strong)
    return fmt::format("Result: PASS ({}strong: {} written by the replay verified in {} region(s), {} of it poisoned "
                       "first; {}, {} of {} regions identical)",
                       nondet, human_bytes(footprint_written), footprint_regions, human_bytes(poisoned), how, exact(),
                       regions.size());
  if (written() == 0)
    return fmt::format("Result: PASS ({}weak: the application's launch left every byte as it was, so a replay that "
                       "writes nothing would pass too; {}, {} of {} regions identical)",
                       nondet, how, exact(), regions.size());
  return fmt::format("Result: PASS ({}{}, {} of {} regions identical; the launch wrote {} in {} regions)", nondet, how,
                     exact(), regions.size(), human_bytes(written()), written_regions);
}

nlohmann::json Verdict::to_json() const {
  nlohmann::json regs = nlohmann::json::array();
  for (const auto& r : regions) {
    nlohmann::json j = {{"id", r.id},
                        {"kind", r.kind},
                        {"base", hex_addr(r.base)},
                        {"size", r.size},
                        {"written", r.written},
                        {"pass", r.result.pass()},
                        {"exact", r.result.exact()},
                        {"differing_bytes", r.result.differing_bytes},
                        {"mismatches", r.result.mismatches},
                        {"max_abs_error", r.result.max_abs_error},
                        {"max_rel_error", r.result.max_rel_error},
                        {"summary", r.summary()}};
    if (r.result.first_bad_offset) j["first_bad_offset"] = *r.result.first_bad_offset;
    nlohmann::json pieces = nlohmann::json::array();
    for (const auto& p : r.pieces) {
      nlohmann::json pj = {{"offset", p.piece.begin},
                           {"size", p.piece.end - p.piece.begin},
                           {"dtype", compare::to_string(p.piece.dtype)},
                           {"atol", p.piece.tol.atol},
                           {"rtol", p.piece.tol.rtol},
                           {"pass", p.result.pass()},
                           {"exact", p.result.exact()},
                           {"mismatches", p.result.mismatches},
                           {"elements", p.result.elements},
                           {"max_abs_error", p.result.max_abs_error},
                           {"max_rel_error", p.result.max_rel_error},
                           {"nan_expected", p.result.nan_expected},
                           {"nan_actual", p.result.nan_actual},
                           {"summary", compare::summary(p.result)}};
      if (p.result.first_bad_offset) pj["first_bad_offset"] = *p.result.first_bad_offset;
      pieces.push_back(std::move(pj));
    }
    j["pieces"] = std::move(pieces);
    regs.push_back(j);
  }
  return {{"result", pass() ? "PASS" : "FAIL"}, {"regions", regs}, {"line", line()},
          {"spec", spec_source},
          {"written_bytes", written()},
          {"strength", strong ? "strong" : written() ? "weak-no-footprint" : "none: the launch changed no byte"},
          {"footprint_written_bytes", footprint_written},
          {"poisoned_bytes", poisoned},
          {"nondeterministic_regions", nondeterministic}};
}

}  // namespace kerncap::replay
