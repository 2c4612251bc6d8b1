#include "extract/profile_targets.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "format/safe_file.hpp"
#include "format/strict_json.hpp"
#include "profile/report_json.hpp"

namespace kerncap::extract {
namespace {

constexpr std::string_view kFormat = profile::kReportFormat;
constexpr uint64_t kVersion = profile::kReportVersion;
// No profile lists more kernels than this; a longer list is not one we wrote.
constexpr size_t kMaxKernels = 1'000'000;
constexpr size_t kMaxNameBytes = 64 << 10;

}  // namespace

std::vector<ProfileKernel> top_kernels(std::string_view text, size_t n, const std::string& file_name) {
  const format::JsonDoc doc{fmt::format("profile {}", file_name),
                            "pass a profile.json written by `kerncap profile -o profile.json`"};
  const nlohmann::json j = format::parse_bounded_json(text, doc);
  const format::JsonField root(j, doc);
  root.object();
  if (root.at("format").str(64) != kFormat) root.at("format").fail(fmt::format("is not \"{}\"", kFormat));
  const uint64_t version = root.at("version").u64();
  if (version != kVersion)
    root.at("version").fail(fmt::format("is {}; this kerncap reads profile version {} (profile again with it)",
                                        version, kVersion));
  const format::JsonField kernels = root.at("kernels");
  const size_t count = kernels.array_size(kMaxKernels);
  std::vector<ProfileKernel> all;
  std::set<uint64_t> ranks;
  std::set<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    const format::JsonField k = kernels.elem(i);
    k.object();
    ProfileKernel pk;
    pk.rank = k.at("rank").u64(1, kMaxKernels);
    pk.mangled = k.at("name").str(kMaxNameBytes);
    if (pk.mangled.empty()) k.at("name").fail("is empty");
    if (pk.mangled.find('\0') != std::string::npos) k.at("name").fail("holds a NUL character");
    if (auto d = k.find("demangled")) pk.demangled = d->str(kMaxNameBytes);
    if (auto g = k.find("in_graph")) pk.in_graph = g->boolean();
    if (!ranks.insert(pk.rank).second) k.at("rank").fail(fmt::format("repeats rank {}", pk.rank));
    if (!names.insert(pk.mangled).second) k.at("name").fail("repeats a kernel listed before");
    all.push_back(std::move(pk));
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  if (all.size() > n) all.resize(n);
  return all;
}

std::vector<ProfileKernel> top_kernels_from_file(const std::filesystem::path& file, size_t n) {
  const std::vector<uint8_t> text = format::ReadOnlyFile::open(file).read_all(format::kMaxJsonBytes);
  return top_kernels(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), n, file.string());
}

}  // namespace kerncap::extract
