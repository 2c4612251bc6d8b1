#include "format/window_liveout.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "format/safe_file.hpp"
#include "format/strict_json.hpp"

namespace kerncap::format {
namespace {

const JsonDoc kLiveOutDoc{"the window's live-out observation (window_liveout.json)",
                          "the window capture is damaged or crafted; extract it again"};
constexpr uint64_t kMaxLiveOutJsonBytes = uint64_t{64} << 20;
constexpr size_t kMaxEvidence = 4096;

}  // namespace

std::set<uint32_t> WindowLiveOut::live() const {
  std::set<uint32_t> out;
  for (const auto& r : regions)
    if (r.read) out.insert(r.id);
  return out;
}

const LiveOutRegion* WindowLiveOut::find(uint32_t id) const {
  for (const auto& r : regions)
    if (r.id == id) return &r;
  return nullptr;
}

nlohmann::json to_json(const WindowLiveOut& w) {
  nlohmann::json regions = nlohmann::json::array();
  for (const auto& r : w.regions) {
    nlohmann::json reads = nlohmann::json::array();
    for (const auto& [o, n] : r.reads) reads.push_back({o, n});
    regions.push_back(
        {{"id", r.id}, {"read", r.read}, {"evidence", r.evidence}, {"reads", reads}, {"reads_complete", r.reads_complete}});
  }
  return {{"format", kWindowLiveOutFormat}, {"version", w.version},   {"horizon", w.horizon},
          {"launches_observed", w.launches_observed}, {"ended", w.ended}, {"regions", regions}};
}

WindowLiveOut window_liveout_from_json(const nlohmann::json& j) {
  const JsonField top(j, kLiveOutDoc);
  top.object();
  if (top.at("format").str(64) != kWindowLiveOutFormat)
    top.at("format").fail(fmt::format("is not \"{}\"", kWindowLiveOutFormat));
  WindowLiveOut w;
  const uint64_t version = top.at("version").u64();
  if (version > static_cast<uint64_t>(kWindowLiveOutVersion))
    input_error(fmt::format("this window's live-out observation was written by a newer kerncap (version {}); this "
                            "kerncap reads version {}: update kerncap or extract the window again with this one",
                            version, kWindowLiveOutVersion));
  if (version < 1) top.at("version").fail("must be at least 1");
  w.version = static_cast<int>(version);
  w.horizon = top.at("horizon").u64();
  w.launches_observed = top.at("launches_observed").u64();
  w.ended = top.at("ended").str(64);
  if (w.ended != "horizon" && w.ended != "application ended")
    top.at("ended").fail("must be \"horizon\" or \"application ended\"");
  const JsonField regions = top.at("regions");
  std::set<uint32_t> seen;
  for (size_t i = 0, n = regions.array_size(kMaxLiveOutRegions); i < n; ++i) {
    const JsonField r = regions.elem(i);
    r.object();
    LiveOutRegion lr;
    lr.id = r.at("id").u32();
    lr.read = r.at("read").boolean();
    lr.evidence = r.at("evidence").str(kMaxEvidence);
    if (version >= 2) {
      const JsonField reads = r.at("reads");
      for (size_t k = 0, nr = reads.array_size(kMaxLiveOutReads); k < nr; ++k) {
        const JsonField pair = reads.elem(k);
        if (pair.array_size() != 2) pair.fail("must be [offset, size]");
        lr.reads.emplace_back(pair.elem(0).u64(), pair.elem(1).u64(1));
      }
      lr.reads_complete = r.at("reads_complete").boolean();
    }
    if (!seen.insert(lr.id).second) r.at("id").fail("is listed twice");
    w.regions.push_back(std::move(lr));
  }
  return w;
}

std::optional<WindowLiveOut> read_window_liveout(const std::filesystem::path& capture_dir) {
  // Absent only when nothing has the name: a directory, a FIFO or a link there is refused by
  // the confined open below, not taken for "no observation" (issue 38's directory named
  // kerncap.toml, silently ignored; found again here by the fuzzer).
  std::error_code ec;
  if (std::filesystem::symlink_status(capture_dir / kWindowLiveOutFile, ec).type() ==
      std::filesystem::file_type::not_found)
    return std::nullopt;
  const ReadOnlyFile f = ReadOnlyFile::open_in(capture_dir, kWindowLiveOutFile, "the window's live-out observation");
  const std::vector<uint8_t> bytes = f.read_all(kMaxLiveOutJsonBytes);
  return window_liveout_from_json(
      parse_bounded_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), kLiveOutDoc));
}

}  // namespace kerncap::format
