#include "replay/validate.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "format/region_bytes.hpp"
#include "replay/compare_plan.hpp"
#include "replay/compare_spec.hpp"
#include "replay/uniform_check.hpp"

namespace kerncap::replay {

namespace {

// The expected bytes of region `r` in [off, off + n): BEFORE with the AFTER runs applied and
// pointer words into moved spans rewritten. Read with the 8-byte-aligned words around it, so
// a word that straddles a piece or chunk edge is rewritten exactly as restore() rewrote it.
// Without the AFTER runs and with the session's restore filter, the same reader gives what
// restore() left in memory before the launch (for must_write).
class Expected {
 public:
  Expected(const format::Capture& c, const format::Region& r, const RelocationMap& reloc, uint8_t* buffer,
           bool with_after = true, const Session::RestoreFilter* filter = nullptr, size_t index = 0)
      : r_(r), reloc_(reloc), buffer_(buffer), before_(c, r),
        after_(c.dir, c.manifest.after_file, "AFTER memory"), filter_(filter && *filter ? filter : nullptr),
        index_(index) {
    if (!with_after) return;
    for (const auto& a : c.manifest.after)
      if (a.region == r.id) runs_.push_back(&a);
    // In offset order (apart: the manifest's rules), so at() finds its runs by bisection:
    // the comparison reads back many small steps where the device vouches for the rest.
    std::sort(runs_.begin(), runs_.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  }
  // Largest n for a buffer of `capacity` bytes (the window adds at most 7 bytes each side).
  static uint64_t step(uint64_t capacity) { return (capacity - 16) / 64 * 64; }

  const uint8_t* at(uint64_t off, uint64_t n) {
    const uint64_t lo = std::max(r_.base, (r_.base + off) / 8 * 8) - r_.base;
    const uint64_t hi = std::min(r_.base + r_.size, (r_.base + off + n + 7) / 8 * 8) - r_.base;
    before_.read_at(lo, buffer_, hi - lo);
    auto it = std::partition_point(runs_.begin(), runs_.end(), [lo](auto* a) { return a->offset + a->size <= lo; });
    for (; it != runs_.end() && (*it)->offset < hi; ++it) {
      const auto* a = *it;
      const uint64_t b = std::max(lo, a->offset), e = std::min(hi, a->offset + a->size);
      if (b < e) after_.read_at(a->file_offset + (b - a->offset), buffer_ + (b - lo), e - b);
    }
    reloc_.rewrite(buffer_, hi - lo, r_.base + lo);
    if (filter_) (*filter_)(index_, lo, buffer_, hi - lo);
    return buffer_ + (off - lo);
  }

 private:
  const format::Region& r_;
  const RelocationMap& reloc_;
  uint8_t* buffer_;
  format::RegionBytes before_;
  format::BlobReader after_;
  std::vector<const format::AfterRun*> runs_;
  const Session::RestoreFilter* filter_ = nullptr;
  size_t index_ = 0;
};

// Where region r's expected bytes all hold one value (compare_plan.hpp). Regions too small
// for the device check to pay need none.
std::vector<UniformRange> uniform_expected(const Session& session, const format::Region& r) {
  if (r.size < (4ull << 20)) return {};
  const format::Manifest& m = session.capture().manifest;
  std::vector<ByteRange> after;
  for (const auto& a : m.after)
    if (a.region == r.id && a.size) after.push_back({a.offset, a.offset + a.size});
  const RelocationMap& reloc = session.relocations();
  return expected_uniform(format::RegionBytes(session.capture(), r).segments(), merge_ranges(std::move(after)), r.base,
                          r.size, [&reloc](uint64_t word) { return reloc.moved(word); });
}

// The application's AFTER runs of one region as sorted [begin, end) byte ranges.
std::vector<std::pair<uint64_t, uint64_t>> after_runs(const format::Manifest& m, uint32_t id) {
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  for (const auto& a : m.after)
    if (a.region == id && a.size) runs.emplace_back(a.offset, a.offset + a.size);
  std::sort(runs.begin(), runs.end());
  return runs;
}

// Sorted, overlapping or touching runs merged.
std::vector<std::pair<uint64_t, uint64_t>> merged(std::vector<std::pair<uint64_t, uint64_t>> runs) {
  std::sort(runs.begin(), runs.end());
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const auto& r : runs) {
    if (!out.empty() && r.first <= out.back().second) out.back().second = std::max(out.back().second, r.second);
    else out.push_back(r);
  }
  return out;
}

// The invariants' facts of region i: its typed pieces scanned over the AFTER runs and the
// bytes the replay is known to write (whole elements that touch a run, each once), and the
// AFTER bytes the replay changed.
compare::RegionFacts region_facts(Session& session, size_t i, uint64_t written, const InvariantRequest& inv,
                                  uint64_t step) {
  const format::Manifest& m = session.capture().manifest;
  const format::Region& r = m.regions[i];
  compare::RegionFacts f{r.id, written, 0, {}};
  const auto runs = after_runs(m, r.id);
  std::vector<std::pair<uint64_t, uint64_t>> scanned = runs;
  if (inv.known_written && i < inv.known_written->size()) {
    for (const auto& [offset, count] : (*inv.known_written)[i]) {
      scanned.emplace_back(offset, offset + count);
      f.known_written += count;
    }
    scanned = merged(std::move(scanned));
  }
  auto* actual = static_cast<uint8_t*>(session.staging(1));
  if (inv.checks.values()) {
    for (const Piece& p : pieces_of(r, inv.typing)) {
      compare::ValueScanner scan(p.dtype, p.begin);
      for (const auto& [b, e] : compare::element_ranges(p.begin, p.end, compare::dtype_size(p.dtype), scanned)) {
        for (uint64_t off = b; off < e;) {
          const uint64_t n = std::min(step, e - off);
          KC_CU(cuMemcpyDtoH(actual, session.address(i) + off, n));
          scan.feed(actual, n, off - p.begin);
          off += n;
        }
      }
      if (scan.counts().elements) f.pieces.push_back(scan.counts());
    }
  }
  if (inv.checks.must_write) {
    Expected before(session.capture(), r, session.relocations(), static_cast<uint8_t*>(session.staging(0)), false,
                    &session.restore_filter(), i);
    for (const auto& [rb, re] : runs) {
      for (uint64_t off = rb; off < re;) {
        const uint64_t n = std::min(step, re - off);
        const uint8_t* b = before.at(off, n);
        KC_CU(cuMemcpyDtoH(actual, session.address(i) + off, n));
        for (uint64_t k = 0; k < n; ++k) f.replay_changed += b[k] != actual[k];
        off += n;
      }
    }
  }
  return f;
}

}  // namespace

void note_closure(Verdict& v, const format::Manifest& m) {
  for (const auto& r : m.regions) {
    if (!r.omitted) continue;
    ++v.omitted_regions;
    for (const auto& a : m.after)
      if (a.region == r.id) {
        ++v.closure_gaps;
        break;
      }
  }
}

std::string fail_line(const std::string& line, const std::string& extra) {
  const std::string pass_prefix = "Result: PASS (";
  if (extra.empty() || !line.starts_with(pass_prefix)) return line;
  return "Result: FAIL (" + extra + "; " + line.substr(pass_prefix.size());
}

CompareSpec invariant_typing(const CompareSpec& spec, const std::vector<TypedSpan>& signature) {
  CompareSpec out = spec;
  if (spec.dtype != compare::DType::Bytes) return out;  // a forced type covers every byte
  for (const TypedSpan& t : signature) {
    // The parts of t that no span of the spec types already.
    uint64_t at = t.base;
    const uint64_t end = t.base + t.size;
    for (const TypedSpan& s : spec.spans) {
      if (s.base + s.size <= at || s.base >= end) continue;
      if (s.base > at) out.spans.push_back({at, s.base - at, t.dtype, t.tol, t.source});
      at = std::max(at, s.base + s.size);
    }
    if (at < end) out.spans.push_back({at, end - at, t.dtype, t.tol, t.source});
  }
  std::stable_sort(out.spans.begin(), out.spans.end(), [](auto& a, auto& b) { return a.base < b.base; });
  return out;
}

namespace {

// The expected bytes of every region, read from the capture once and kept by the session
// for its later comparisons (`start`: read them now if not tried yet; keep_expected_bytes,
// which an evaluation loop calls from its second evaluation on), when they are all of the
// same image: the capture has no module globals (their relocations change with the image
// loaded) and its regions together hold at most kKeptExpectedBytes. Null otherwise: each
// comparison reads them from the capture.
constexpr uint64_t kKeptExpectedBytes = 512ull << 20;

const std::vector<std::vector<uint8_t>>* kept_expected(Session& session, uint64_t step, bool start) {
  Session::ExpectedBytes& kept = session.expected_bytes();
  if (kept.tried || !start) return kept.regions.empty() ? nullptr : &kept.regions;
  kept.tried = true;
  const format::Manifest& m = session.capture().manifest;
  uint64_t total = 0;
  for (const format::Region& r : m.regions) {
    if (r.kind == format::MemKind::Global) return nullptr;
    total += r.size;
  }
  if (total > kKeptExpectedBytes) return nullptr;
  std::vector<std::vector<uint8_t>> regions(m.regions.size());
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const format::Region& r = m.regions[i];
    regions[i].resize(r.size);
    Expected expected(session.capture(), r, session.relocations(), static_cast<uint8_t*>(session.staging(0)));
    for (uint64_t off = 0; off < r.size; off += step) {
      const uint64_t n = std::min(step, r.size - off);
      std::memcpy(regions[i].data() + off, expected.at(off, n), n);
    }
  }
  kept.regions = std::move(regions);
  if (UniformCheck* check = session.uniform_check()) {
    std::vector<uint64_t> addresses;
    for (size_t i = 0; i < m.regions.size(); ++i) addresses.push_back(session.address(i));
    std::string why;
    kept.on_device = check->keep_expected(kept.regions, addresses, &why);
    if (!kept.on_device) log::info("comparing the kept expected bytes on the host: {}", why);
  }
  return &kept.regions;
}

// The plain blocks (compare_plan.hpp) of piece `p` of region i for the comparison against the
// device copy, computed from the session's kept expected bytes once per piece.
const std::vector<uint8_t>& plain_of(Session& session, size_t i, const Piece& p, const compare::Comparator& cmp,
                                     const CompareGrid& g, const std::vector<uint8_t>& expected) {
  auto& cache = session.expected_bytes().plain;
  const auto key = std::make_tuple(i, p.begin, p.end, static_cast<int>(p.dtype), g.step);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  return cache[key] = plain_blocks(g, expected.data() + p.begin,
                                   [&cmp](const uint8_t* b, uint64_t n) { return cmp.plain(b, n); });
}

double since(std::chrono::steady_clock::time_point& t) {
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}

}  // namespace

void keep_expected_bytes(Session& session) {
  (void)kept_expected(session, Expected::step(session.staging_bytes()), true);
}

Verdict compare_with_after(Session& session, const CompareSpec& spec, const InvariantRequest* inv) {
  const format::Manifest& m = session.capture().manifest;
  auto* actual = static_cast<uint8_t*>(session.staging(1));
  const uint64_t step = Expected::step(session.staging_bytes());  // whole elements of every type
  const auto t0 = std::chrono::steady_clock::now();
  Verdict v;
  v.spec_source = spec.source;
  auto lap = t0;
  const std::vector<std::vector<uint8_t>>* kept = kept_expected(session, step, false);
  v.expected_kept = kept != nullptr;
  const bool on_device = kept && session.expected_bytes().on_device;
  v.expected_s += since(lap);
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const format::Region& r = m.regions[i];
    RegionVerdict rv{r.id, format::to_string(r.kind), r.base, r.size, 0, {}, {}};
    for (const auto& a : m.after)
      if (a.region == r.id) rv.written += a.size;
    // Read from the capture only when the session keeps no copy (the same bytes either way).
    std::optional<Expected> expected;
    if (!kept)
      expected.emplace(session.capture(), r, session.relocations(), static_cast<uint8_t*>(session.staging(0)));
    // Where the expected bytes are one known value, the device vouches for the blocks that
    // hold it and only the others are read back (compare_plan.hpp).
    // (With the expected bytes on the device, every piece large enough for it is compared there.)
    const std::vector<UniformRange> uniform = on_device ? std::vector<UniformRange>{} : uniform_expected(session, r);
    for (const Piece& p : pieces_of(r, spec)) {
      // Offsets fed to the comparator are piece-relative: a piece may start anywhere in the
      // region, and elements are counted from its start.
      compare::Comparator cmp(p.dtype, p.tol);
      const CompareGrid g{p.begin, p.end, step, compare::kBlockBytes};
      std::vector<UniformRange> plain;  // values the piece's type compares as plain bytes
      for (const UniformRange& u : uniform)
        if (u.end > p.begin && u.begin < p.end && cmp.plain(u.value)) plain.push_back(u);
      std::vector<uint32_t> device;
      std::vector<CompareStep> steps;
      if (on_device && p.end - p.begin >= kEqualOnDeviceBytes) {
        // The device compares every block with its copy of the expected bytes; blocks that
        // differ, or whose expected elements the comparator counts (NaN, Inf), are read back.
        UniformCheck* check = session.uniform_check();
        device = check->equal(session.address(i) + p.begin, check->expected(i) + p.begin, g, session.stream());
        steps = plan_compare_equal(g, device, plain_of(session, i, p, cmp, g, (*kept)[i]));
        v.expected_on_device = true;
      } else {
        if (worth_checking(g, plain))
          if (UniformCheck* check = session.uniform_check())
            device = check->run(session.address(i) + p.begin, g, session.stream());
        steps = plan_compare(g, plain, device);
      }
      for (const CompareStep& st : steps) {
        if (st.identical()) {
          cmp.feed_identical(st.size, st.offset - p.begin);
          v.compared_on_device += st.size;
          continue;
        }
        (void)since(lap);
        const uint8_t* e = kept ? (*kept)[i].data() + st.offset : expected->at(st.offset, st.size);
        v.expected_s += since(lap);
        KC_CU(cuMemcpyDtoH(actual, session.address(i) + st.offset, st.size));
        v.read_back_s += since(lap);
        cmp.feed(e, actual, st.size, st.offset - p.begin);
        v.host_s += since(lap);
        v.read_back += st.size;
      }
      PieceVerdict pv{p, cmp.result()};
      if (pv.result.first_bad_offset) *pv.result.first_bad_offset += p.begin;
      compare::merge(rv.result, pv.result);
      rv.pieces.push_back(std::move(pv));
    }
    v.regions.push_back(std::move(rv));
  }
  if (inv && inv->checks.any()) {
    std::vector<compare::RegionFacts> facts;
    for (size_t i = 0; i < m.regions.size(); ++i) {
      const uint64_t written = v.regions[i].written;
      const bool known = inv->known_written && i < inv->known_written->size() && !(*inv->known_written)[i].empty();
      facts.push_back(written || known ? region_facts(session, i, written, *inv, step)
                              : compare::RegionFacts{m.regions[i].id, 0, 0, {}});
    }
    v.invariants = compare::check_invariants(inv->checks, std::move(facts));
  }
  v.compare_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::debug("compare: {:.3f} s; {} vouched for on the device, {} read back", v.compare_s,
             human_bytes(v.compared_on_device), human_bytes(v.read_back));
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

bool Verdict::pass() const { return fault.empty() && failing() == 0 && (!invariants || invariants->pass()); }

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

namespace {

// How a region was compared, for a nondeterministic kernel's line: its typed pieces (type, where
// the type came from, tolerance), or bytes exactly and why.
std::string compared_how(const RegionVerdict& r, bool nondeterministic) {
  std::string typed;
  size_t kinds = 0;
  for (const PieceVerdict& p : r.pieces) {
    if (p.piece.dtype == compare::DType::Bytes) continue;
    const std::string one = fmt::format("{} from {} within atol {:.3g}, rtol {:.3g}", compare::to_string(p.piece.dtype),
                                        p.piece.source.empty() ? "the spec" : p.piece.source, p.piece.tol.atol,
                                        p.piece.tol.rtol);
    if (typed.empty()) typed = one;
    if (one != typed) ++kinds;
  }
  const std::string why = nondeterministic ? "nondeterministic" : "the two replays agreed here";
  if (typed.empty())
    return fmt::format("{}; compared exactly as bytes{}", why,
                       nondeterministic ? ": no element type known (no signature types, none from SASS)" : "");
  return fmt::format("{}; {}{}", why, typed, kinds ? fmt::format(" and {} more typed piece(s)", kinds) : "");
}

bool has_float_piece(const RegionVerdict& r) {
  return std::any_of(r.pieces.begin(), r.pieces.end(),
                     [](const PieceVerdict& p) { return compare::is_float(p.piece.dtype); });
}

}  // namespace

std::string Verdict::line() const {
  if (!fault.empty()) return fmt::format("Result: FAIL (the candidate faulted: {})", fault);
  uint64_t written_regions = 0, typed = 0, untyped = 0;
  double worst_abs = 0, worst_rel = 0;
  auto in_nondet = [&](uint32_t id) {
    return std::find(nondeterministic.begin(), nondeterministic.end(), id) != nondeterministic.end();
  };
  for (const auto& r : regions) {
    if (r.written) ++written_regions;
    // The error the tolerance allowed: of the nondeterministic regions compared as floats (all
    // regions when none were found nondeterministic). A region compared as bytes has no error
    // to state: a FAIL never reads "max abs error 0".
    if (!nondeterministic.empty() && !in_nondet(r.id)) continue;
    if (!nondeterministic.empty() && !has_float_piece(r)) {
      ++untyped;
      continue;
    }
    ++typed;
    worst_abs = std::max(worst_abs, r.result.max_abs_error);
    worst_rel = std::max(worst_rel, r.result.max_rel_error);
  }
  std::string nondet;
  if (!nondeterministic.empty()) {
    const std::string cause =
        nondeterministic_cause.empty()
            ? fmt::format("two replays of the captured image differ in {} region(s)", nondeterministic.size())
            : nondeterministic_cause;
    std::string how;
    if (typed)
      how = fmt::format("{} region(s) compared within their element types' tolerance (max abs error {:.3g}, max rel "
                        "error {:.3g})",
                        typed, worst_abs, worst_rel);
    if (untyped)
      how += fmt::format("{}{} region(s) compared exactly as bytes: no element type known for them (no signature "
                         "types, none from SASS)",
                         how.empty() ? "" : ", ", untyped);
    nondet = fmt::format("nondeterministic kernel ({}): {}; ", cause, how);
  }
  const uint64_t violations = invariants ? invariants->violations.size() : 0;
  if (closure_gaps)
    nondet += fmt::format("closure gap: the launch changed {} region(s) no parameter points into, whose BEFORE bytes "
                          "the capture lacks (extract with --closure all); ",
                          closure_gaps);
  // A nondeterministic kernel's FAIL names what was compared and how, region by region: its
  // type, where the type came from and the tolerance, or bytes exactly and why.
  if (failing() && !nondeterministic.empty()) {
    std::string which;
    int listed = 0;
    for (const auto& r : regions) {
      if (r.result.pass()) continue;
      if (listed++ == 3) {
        which += "; ...";
        break;
      }
      which += fmt::format("; region {} ({}): {}", r.id, compared_how(r, in_nondet(r.id)), r.summary());
    }
    nondet += fmt::format("failing{}; ", which);
  }
  if (failing())
    return fmt::format("Result: FAIL ({}{} of {} regions differ{}{})", nondet, failing(), regions.size(),
                       violations ? fmt::format("; {} invariant violation(s)", violations) : "",
                       omitted_regions ? fmt::format("; the capture omitted {} region(s) no pointer of the launch "
                                                     "reaches, replayed as 0xCB bytes: if the kernel reads them, "
                                                     "extract with --closure all",
                                                     omitted_regions)
                                       : "");
  if (violations)
    return fmt::format("Result: FAIL ({}{} invariant violation(s) of {}; every region matches the application's "
                       "result)",
                       nondet, violations, compare::to_string(invariants->checked));
  const std::string how = exact() == regions.size() ? "byte-exact" : "within tolerance";
  if (unproven())
    return fmt::format("Result: PASS ({}weak: the kernel writes {} in {} region(s) but reads all of it first, so none "
                       "could be poisoned, and the application's launch left every byte as it was: a replay that "
                       "skips those writes would pass too; {}, {} of {} regions identical)",
                       nondet, human_bytes(footprint_written), footprint_regions, how, exact(), regions.size());
  if (strong && footprint_written == 0)
    return fmt::format("Result: PASS ({}weak: the footprint saw this kernel write no global memory and probing "
                       "proved no write it cannot see (TMA, surface stores into a CUDA array the kernel does not read), "
                       "so nothing could be poisoned and \"strong\" "
                       "would prove nothing; {}, {} of {} regions identical)",
                       nondet, how, exact(), regions.size());
  if (strong)
    return fmt::format("Result: PASS ({}strong: {} written by the replay verified in {} region(s), {} of it poisoned "
                       "first{}; {}, {} of {} regions identical)",
                       nondet, human_bytes(footprint_written), footprint_regions, human_bytes(poisoned),
                       probed_poisoned ? fmt::format(" ({} in {} region(s) whose writes probing proved: stores the "
                                                     "sanitizer cannot see, such as TMA or surface stores)",
                                                     human_bytes(probed_poisoned), probed_regions)
                                       : "",
                       how, exact(), regions.size());
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
                           {"summary", compare::summary(p.result)},
                           // Where the element type came from: "signature", "sass", the spec's source
                           // (compare.json's path, "command line", ...), "--tolerance"; null for bytes.
                           {"type_source", p.piece.source.empty() ? nlohmann::json(nullptr)
                                                                  : nlohmann::json(p.piece.source)}};
      if (p.result.first_bad_offset) pj["first_bad_offset"] = *p.result.first_bad_offset;
      pieces.push_back(std::move(pj));
    }
    j["pieces"] = std::move(pieces);
    regs.push_back(j);
  }
  nlohmann::json out = {{"result", pass() ? "PASS" : "FAIL"}, {"regions", regs}, {"line", line()},
          {"spec", spec_source},
          {"omitted_regions", omitted_regions},
          {"closure_gaps", closure_gaps},
          {"written_bytes", written()},
          {"strength", !fault.empty() ? "none: the candidate faulted"
                       : unproven()  ? "none: the launch changed no byte and the kernel reads every byte it writes"
                       : strong && footprint_written == 0 ? "weak-footprint-saw-no-write"
                       : strong    ? "strong"
                       : written() ? "weak-no-footprint"
                                   : "none: the launch changed no byte"},
          {"footprint_written_bytes", footprint_written},
          {"compare_work", {{"on_device_bytes", compared_on_device}, {"read_back_bytes", read_back},
                            {"seconds", compare_s}, {"expected_s", expected_s}, {"read_back_s", read_back_s},
                            {"host_s", host_s}, {"expected_kept", expected_kept},
                            {"expected_on_device", expected_on_device}}},
          {"poisoned_bytes", poisoned},
          {"probed_poisoned_bytes", probed_poisoned},
          {"nondeterministic_regions", nondeterministic},
          {"nondeterministic_cause", nondeterministic.empty() ? nlohmann::json(nullptr)
                                                              : nlohmann::json(nondeterministic_cause)},
          {"fault", fault.empty() ? nlohmann::json(nullptr) : nlohmann::json(fault)}};
  if (invariants) out["invariants"] = replay::to_json(*invariants);
  return out;
}

nlohmann::json to_json(const compare::InvariantReport& r) {
  auto opt = [](const auto& o) { return o ? nlohmann::json(*o) : nlohmann::json(nullptr); };
  nlohmann::json checked = nlohmann::json::array();
  for (auto [on, name] : {std::pair{r.checked.no_nan, "no_nan"}, std::pair{r.checked.no_inf, "no_inf"},
                          std::pair{r.checked.non_negative, "non_negative"},
                          std::pair{r.checked.must_write, "must_write"}})
    if (on) checked.push_back(name);
  nlohmann::json violations = nlohmann::json::array();
  for (const auto& x : r.violations)
    violations.push_back({{"invariant", x.invariant}, {"region", opt(x.region)}, {"count", x.count},
                          {"first_index", opt(x.first_index)}, {"first_offset", opt(x.first_offset)},
                          {"dtype", x.dtype}, {"message", x.message}});
  nlohmann::json regions = nlohmann::json::array();
  for (const auto& f : r.regions) {
    if (!f.written) continue;
    nlohmann::json pieces = nlohmann::json::array();
    for (const auto& p : f.pieces)
      pieces.push_back({{"dtype", compare::to_string(p.dtype)}, {"offset", p.begin}, {"elements", p.elements},
                        {"nan", p.nan}, {"inf", p.inf}, {"negative", p.negative},
                        {"first_nan", opt(p.first_nan)}, {"first_inf", opt(p.first_inf)},
                        {"first_negative", opt(p.first_negative)}});
    nlohmann::json j = {{"id", f.id}, {"written", f.written}, {"pieces", pieces}};
    if (r.checked.must_write) j["replay_changed"] = f.replay_changed;
    regions.push_back(std::move(j));
  }
  return {{"pass", r.pass()}, {"checked", checked}, {"line", r.line()}, {"violations", violations},
          {"notes", r.notes}, {"regions", regions}};
}

}  // namespace kerncap::replay
