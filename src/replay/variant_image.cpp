#include "replay/variant_image.hpp"

#include <algorithm>
#include <system_error>

#include <fmt/format.h>
#include <xxhash.h>

#include "common/error.hpp"
#include "common/log.hpp"
#include "cubin/cubin.hpp"
#include "format/capture_dir.hpp"
#include "names/demangle.hpp"
#include "replay/global_match.hpp"

namespace kerncap::replay {
namespace fs = std::filesystem;

uint64_t image_hash(std::span<const uint8_t> image) { return XXH3_64bits(image.data(), image.size()); }

VariantImage read_variant_image(const fs::path& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) input_error(fmt::format("variant image {}: no such file", path.string()));
  if (!fs::is_regular_file(st))
    input_error(fmt::format("variant image {}: not a regular file (give a .cubin, .fatbin or .ptx file)", path.string()));
  return variant_image(format::read_file(path), path.string());
}

VariantImage variant_image(std::vector<uint8_t> bytes, std::string desc) {
  if (bytes.empty()) input_error(fmt::format("variant image {} is empty", desc));
  VariantImage v{std::move(bytes), std::move(desc), 0};
  v.hash = image_hash(v.bytes);
  return v;
}

std::string missing_kernel_message(std::span<const uint8_t> image, const std::string& desc,
                                   const std::string& mangled) {
  std::string names;
  try {
    for (const auto& n : cubin::kernel_names(image)) names += "\n  " + n;
  } catch (...) {  // the names are a hint; an image they cannot be read from still gets the message
  }
  return fmt::format("{} does not contain the captured kernel {}{}", desc, mangled,
                     names.empty() ? "" : "; it has:" + names);
}

std::string kernel_in_variant(std::span<const uint8_t> image, const std::string& desc, const std::string& mangled) {
  if (cubin::detect_kind(image) == cubin::ImageKind::Unknown)
    input_error(fmt::format("{} is not a CUDA code object (a cubin, fatbin or PTX file)", desc));
  std::vector<std::string> names;
  try {
    names = cubin::kernel_names(image);
  } catch (...) {
    return mangled;  // unreadable here (an unusual fatbin): cuModuleLoadData and cuModuleGetFunction decide
  }
  if (names.empty() || std::find(names.begin(), names.end(), mangled) != names.end()) return mangled;
  if (auto other = static_counterpart(names, mangled)) {
    log::info("{}: the captured file-local kernel {} is {} in this compile", desc, mangled, *other);
    return *other;
  }
  input_error(missing_kernel_message(image, desc, mangled));
}

std::optional<std::string> static_counterpart(const std::vector<std::string>& names, const std::string& mangled) {
  // Two spellings of one translation-unit-local kernel: the scope tokens normalised
  // (global_match.hpp: "_GLOBAL__N__<hash>_<len>_<file>_<id>" of an anonymous namespace,
  // nvlink's "__nv_static_..." scope), or an nvcc static prefix in front of one Itanium name.
  const std::string normal = normalise_internal_name(mangled);
  const std::string_view itanium = names::itanium_part(mangled);
  if (normal == mangled && itanium.size() == mangled.size()) return std::nullopt;  // not file-local
  std::optional<std::string> found;
  for (const auto& n : names) {
    if (normalise_internal_name(n) != normal && names::itanium_part(n) != itanium) continue;
    if (found) return std::nullopt;  // two candidates: not ours to choose
    found = n;
  }
  return found;
}

int launch_bound(std::span<const uint8_t> image, int sm, const std::string& mangled) {
  try {
    const cubin::Image parsed = cubin::parse_image(image, sm);
    const cubin::KernelInfo* k = parsed.find_kernel(mangled);
    return k && k->max_threads > 0 ? k->max_threads : 0;
  } catch (...) {
    return 0;  // unreadable: the driver decides
  }
}

std::string block_too_large_message(const std::string& desc, const std::string& kernel, uint64_t threads,
                                    int max_threads, bool variant, bool block_given) {
  const std::string head = fmt::format("{} admits at most {} threads a block for {} (its launch bounds)",
                                       desc, max_threads, kernel);
  if (block_given) return fmt::format("{}, but --block asks for {}: give a smaller block", head, threads);
  if (variant)
    return fmt::format("{}, but the captured launch has {} threads a block: the variant must admit the launch's "
                       "block (Triton: num_warps {} or more; CUDA: __launch_bounds__ of at least {}), or be run "
                       "with --block",
                       head, threads, (threads + 31) / 32, threads);
  return fmt::format("{}, but the application launched it with {} threads a block: the capture holds another "
                     "compilation of this kernel than the one launched (several loaded modules hold a kernel of "
                     "this name). Extract again with this kerncap version; if it repeats, please report it",
                     head, threads);
}

}  // namespace kerncap::replay
