#include "reproducer/variant.hpp"

#include <fstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "format/capture_dir.hpp"
#include "format/out_layout.hpp"
#include "reproducer/generator.hpp"

namespace kerncap::reproducer {

namespace fs = std::filesystem;

namespace {

// The first of `sources` (files, or directories searched recursively) newer than `built`.
std::optional<fs::path> newer_source(const std::vector<fs::path>& sources, fs::file_time_type built) {
  std::error_code ec;
  for (const auto& s : sources) {
    if (fs::is_regular_file(s, ec)) {
      if (fs::last_write_time(s, ec) > built) return s;
      continue;
    }
    for (fs::recursive_directory_iterator it(s, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec) && it->last_write_time(ec) > built) return it->path();
  }
  return std::nullopt;
}

// candidate.json from the Triton reproducer: the geometry the candidate needs.
bool same_geometry(const fs::path& out, std::string& why) {
  try {
    std::ifstream in(out / format::out::kCandidateJson);
    const auto geo = nlohmann::json::parse(in);
    std::ifstream min(out / format::kCaptureDirName / format::kManifestName);
    const format::Manifest m = format::from_json(nlohmann::json::parse(min));
    if (geo.at("grid").get<std::array<uint32_t, 3>>() == m.grid &&
        geo.at("block").get<std::array<uint32_t, 3>>() == m.block &&
        geo.at("shared_mem_bytes").get<uint32_t>() == m.shared_mem_bytes)
      return true;
    why = "candidate.cubin changes the launch geometry (candidate.json): only reproducer.py can compare it";
  } catch (const std::exception& e) {
    why = fmt::format("candidate.json is missing or unreadable ({}): rerun reproducer.py", e.what());
  }
  return false;
}

VariantChoice check(const fs::path& out, const char* cubin_name, const char* unit_name,
                    const std::vector<fs::path>& sources, const char* sources_desc) {
  std::error_code ec;
  const fs::path cubin = out / cubin_name;
  if (!fs::is_regular_file(out / unit_name, ec))
    return {std::nullopt, fmt::format("{} exists but there is no {} it was built from: using the captured image "
                                      "(pass --cubin {} to use it)",
                                      cubin.string(), unit_name, cubin.string())};
  const auto built = fs::last_write_time(cubin, ec);
  if (ec) return {};
  if (auto n = newer_source(sources, built))
    return {std::nullopt, fmt::format("{} is older than {}: using the captured image (rebuild the variant first)",
                                      cubin.string(), n->lexically_relative(out).string())};
  return {cubin, fmt::format("the variant {} (newer than {}; --baseline for the captured image)", cubin.string(),
                             sources_desc)};
}

}  // namespace

VariantChoice fresh_variant(const fs::path& dir_in) {
  std::error_code ec;
  fs::path out = dir_in;
  if (fs::exists(out / format::kManifestName, ec)) out = out.parent_path();
  if (out.empty()) out = ".";
  if (fs::is_regular_file(out / kVariantCubin, ec)) {
    // kernel_instance.cu (the captured kernel without the rest of its unit) is built from the same files.
    if (fs::is_regular_file(out / kInstanceSource, ec))
      return check(out, kVariantCubin, kVariantSource,
                   {out / kVariantSource, out / kInstanceSource, out / kMirrorDir, out / kLibraryDir},
                   "kernel_variant.cu, kernel_instance.cu, src/ and library/");
    return check(out, kVariantCubin, kVariantSource, {out / kVariantSource, out / kMirrorDir, out / kLibraryDir},
                 "kernel_variant.cu, src/ and library/");
  }
  if (fs::is_regular_file(out / format::out::kCandidateCubin, ec)) {
    const char* unit = format::out::kKernelVariantPy.data();
    VariantChoice v = check(out, format::out::kCandidateCubin.data(), unit, {out / unit}, unit);
    std::string why;
    if (v.cubin && !same_geometry(out, why)) return {std::nullopt, why};
    return v;
  }
  return {};
}

}  // namespace kerncap::reproducer
