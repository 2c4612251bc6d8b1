#include "format/regime_kernels.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/private_files.hpp"
#include "format/out_layout.hpp"
#include "format/regimes_index.hpp"
#include "format/safe_file.hpp"
#include "format/strict_json.hpp"

namespace kerncap::format {
namespace {

constexpr std::string_view kKernelsFile = out::kRegimeKernelsIndex;
constexpr uint64_t kMaxKernelsIndexBytes = 1 << 20;

}  // namespace

nlohmann::json to_json(const RegimeKernels& r) {
  nlohmann::json list = nlohmann::json::array();
  for (const RegimeKernel& k : r.kernels)
    list.push_back({{"dir", k.dir},
                    {"mangled", k.mangled},
                    {"demangled", k.demangled},
                    {"pid", k.pid},
                    {"launches", k.launches},
                    {"time_ns", k.time_ns},
                    {"app_time_ns", k.app_time_ns},
                    {"regimes", k.regimes},
                    {"captured", k.captured}});
  return {{"format", kRegimeKernelsFormat},
          {"version", kRegimeKernelsVersion},
          {"application", r.application},
          {"kernels", std::move(list)}};
}

RegimeKernels regime_kernels_from_json(std::string_view text, const std::string& file_name) {
  const JsonDoc doc{fmt::format("regime kernel index {}", file_name),
                    "the regime sets are damaged or crafted; extract them again with `kerncap extract --regimes`"};
  const nlohmann::json j = parse_bounded_json(text, doc);
  const JsonField root(j, doc);
  root.object();
  if (root.at("format").str(64) != kRegimeKernelsFormat)
    root.at("format").fail(fmt::format("must be \"{}\"", kRegimeKernelsFormat));
  const int version = root.at("version").i32();
  if (version != kRegimeKernelsVersion)
    root.at("version").fail(fmt::format("is {}; this kerncap reads version {} (a newer kerncap wrote it?)", version,
                                        kRegimeKernelsVersion));
  RegimeKernels r;
  r.application = root.at("application").str(64 << 10);
  const JsonField list = root.at("kernels");
  const size_t n = list.array_size(kMaxRegimeKernels);
  for (size_t i = 0; i < n; ++i) {
    const JsonField f = list.elem(i);
    f.object();
    RegimeKernel k;
    k.dir = index_dir_name(f.at("dir"));
    for (const auto& other : r.kernels)
      if (other.dir == k.dir) f.at("dir").fail(fmt::format("repeats kernel directory {}", k.dir));
    k.mangled = f.at("mangled").str(64 << 10);
    k.demangled = f.at("demangled").str(64 << 10);
    k.pid = f.at("pid").i64(0);
    k.launches = f.at("launches").u64();
    k.time_ns = f.at("time_ns").u64();
    k.app_time_ns = f.at("app_time_ns").u64();
    if (k.time_ns > k.app_time_ns)
      f.at("time_ns").fail(fmt::format("is {} ns, more than the application's {} ns", k.time_ns, k.app_time_ns));
    k.regimes = f.at("regimes").u64(0, kMaxRegimes);
    k.captured = f.at("captured").u64(0, k.regimes);
    r.kernels.push_back(std::move(k));
  }
  return r;
}

bool has_regime_kernels(const std::filesystem::path& out) {
  std::error_code ec;
  return std::filesystem::symlink_status(out / kKernelsFile, ec).type() != std::filesystem::file_type::not_found;
}

RegimeKernels read_regime_kernels(const std::filesystem::path& out) {
  const ReadOnlyFile f = ReadOnlyFile::open_in(out, std::string(kKernelsFile), "the regime kernel index");
  const std::vector<uint8_t> bytes = f.read_all(kMaxKernelsIndexBytes);
  return regime_kernels_from_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                  (out / kKernelsFile).string());
}

void write_regime_kernels(const std::filesystem::path& out, const RegimeKernels& r) {
  files::replace_file(out / kKernelsFile, to_json(r).dump(2) + "\n");
}

}  // namespace kerncap::format
