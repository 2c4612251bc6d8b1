#include "replay/validate.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/hex.hpp"
#include "replay/compare_spec.hpp"

namespace kerncap::replay {

Verdict compare_with_after(Session& session, const CompareSpec& spec) {
  const format::Manifest& m = session.capture().manifest;
  const RelocationMap& reloc = session.relocations();
  auto* expected = static_cast<uint8_t*>(session.staging(0));
  auto* actual = static_cast<uint8_t*>(session.staging(1));
  const uint64_t step = session.staging_bytes() / 64 * 64;  // whole elements of every type
  format::BlobReader after(session.capture().path(m.after_file));
  Verdict v;
  v.spec_source = spec.source;
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const format::Region& r = m.regions[i];
    RegionVerdict rv{r.id, format::to_string(r.kind), r.base, r.size, 0, {}};
    std::vector<const format::AfterRun*> runs;
    for (const auto& a : m.after)
      if (a.region == r.id) {
        runs.push_back(&a);
        rv.written += a.size;
      }
    format::BlobReader before(session.capture().path(r.file));
    for (const Piece& p : pieces_of(r, spec)) {
      compare::Comparator cmp(p.dtype, p.tol);
      for (uint64_t off = p.begin; off < p.end;) {
        const uint64_t n = std::min(step, p.end - off);
        before.read_at(off, expected, n);
        for (const auto* a : runs) {
          uint64_t lo = std::max(off, a->offset), hi = std::min(off + n, a->offset + a->size);
          if (lo < hi) after.read_at(a->file_offset + (lo - a->offset), expected + (lo - off), hi - lo);
        }
        reloc.rewrite(expected, n, r.base + off);
        KC_CU(cuMemcpyDtoH(actual, session.address(i) + off, n));
        cmp.feed(expected, actual, n, off);
        off += n;
      }
      compare::merge(rv.result, cmp.result());
    }
    v.regions.push_back(std::move(rv));
  }
  return v;
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
                        {"summary", compare::summary(r.result)}};
    if (r.result.first_bad_offset) j["first_bad_offset"] = *r.result.first_bad_offset;
    regs.push_back(j);
  }
  return {{"result", pass() ? "PASS" : "FAIL"}, {"regions", regs}, {"line", line()},
          {"spec", spec_source},
          {"written_bytes", written()},
          {"strength", written() ? "weak-no-footprint" : "none: the launch changed no byte"},
          {"nondeterministic_regions", nondeterministic}};
}

}  // namespace kerncap::replay
