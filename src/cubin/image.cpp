// Image-level entry points: what kind of code object is this, and which cubin of a
// fatbin the driver would run on a given SM.
#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/ranges.h>

#include <fmt/format.h>

#include "common/error.hpp"
#include "cubin/cubin.hpp"
#include "cubin/fatbin_layout.hpp"

namespace kerncap::cubin {

using namespace detail;

const char* to_string(ImageKind k) {
  switch (k) {
    case ImageKind::Cubin: return "cubin";
    case ImageKind::Fatbin: return "fatbin";
    case ImageKind::Ptx: return "ptx";
    default: return "unknown";
  }
}

namespace {

bool looks_like_ptx(std::span<const uint8_t> image) {
  std::string_view text(reinterpret_cast<const char*>(image.data()), image.size());
  text = text.substr(0, text.find('\0'));
  const std::string_view head = text.substr(0, 512);
  const bool binary = std::any_of(head.begin(), head.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x09 || (u > 0x0d && u < 0x20);
  });
  return !binary && (text.find(".version") != std::string_view::npos || text.find(".entry") != std::string_view::npos);
}

std::string describe(const std::vector<FatbinEntry>& entries) {
  std::string s;
  for (const FatbinEntry& e : entries) {
    if (!s.empty()) s += ", ";
    if (e.kind == ImageKind::Unknown)
      s += fmt::format("{} for sm_{} (unreadable)", e.raw_kind == 8 ? "LTO IR" : fmt::format("kind-{} entry", e.raw_kind), e.sm);
    else
      s += fmt::format("{}_{}", e.kind == ImageKind::Cubin ? "sm" : "compute", e.sm);
  }
  return s.empty() ? "nothing loadable" : s;
}

// The driver's choice: the cubin for exactly this SM, else one of the same major with a
// lower minor (binary compatible), else PTX it can JIT (virtual arch <= SM). sm == 0 takes
// the highest cubin.
const FatbinEntry* choose(const std::vector<FatbinEntry>& entries, int sm) {
  const FatbinEntry* best = nullptr;
  for (const FatbinEntry& e : entries) {
    if (e.kind != ImageKind::Cubin) continue;
    const bool fits = sm == 0 || (e.sm <= sm && e.sm / 10 == sm / 10);
    if (fits && (!best || e.sm > best->sm)) best = &e;
  }
  if (best) return best;
  for (const FatbinEntry& e : entries) {
    if (e.kind != ImageKind::Ptx) continue;
    if ((sm == 0 || e.sm <= sm) && (!best || e.sm > best->sm)) best = &e;
  }
  return best;
}

}  // namespace

ImageKind detect_kind(std::span<const uint8_t> image) {
  if (image.size() >= 4) {
    uint32_t magic = 0;
    std::memcpy(&magic, image.data(), 4);
    if (magic == 0x464c457f) return ImageKind::Cubin;
    if (magic == kFatbinMagic || magic == kFatbinWrapperMagic) return ImageKind::Fatbin;
  }
  return looks_like_ptx(image) ? ImageKind::Ptx : ImageKind::Unknown;
}

const KernelInfo* Image::find_kernel(std::string_view mangled) const {
  for (const KernelInfo& k : kernels)
    if (k.name == mangled) return &k;
  return nullptr;
}

Image parse_image(std::span<const uint8_t> image, int sm) {
  switch (detect_kind(image)) {
    case ImageKind::Cubin: return parse_cubin(image);
    case ImageKind::Ptx: return parse_ptx(image);
    case ImageKind::Fatbin: break;
    default:
      input_error(fmt::format("not a cubin, fatbin or PTX ({} bytes, starting {:02x}); pass the code object "
                              "the application loaded",
                              image.size(), fmt::join(image.first(std::min<size_t>(image.size(), 8)), " ")));
  }
  const std::vector<FatbinEntry> entries = parse_fatbin(image);
  const FatbinEntry* e = choose(entries, sm);
  if (!e)
    input_error(fmt::format("the fatbin holds {}; none of it runs on sm_{} (a cubin needs the same major "
                            "version and a minor <= the device's; PTX needs compute_X <= sm). Rebuild with "
                            "-gencode for this GPU",
                            describe(entries), sm));
  Image img = e->kind == ImageKind::Cubin ? parse_cubin(e->bytes) : parse_ptx(e->bytes);
  img.kind = ImageKind::Fatbin;
  if (img.sm == 0) img.sm = e->sm;
  return img;
}

std::vector<uint8_t> code_for(std::span<const uint8_t> image, int sm) {
  if (detect_kind(image) != ImageKind::Fatbin) return {image.begin(), image.end()};
  const std::vector<FatbinEntry> entries = parse_fatbin(image);
  const FatbinEntry* e = choose(entries, sm);
  if (!e) input_error(fmt::format("the fatbin holds {}; none of it runs on sm_{}", describe(entries), sm));
  return e->bytes;
}

std::vector<std::string> kernel_names(std::span<const uint8_t> image) {
  std::vector<std::string> names;
  auto add = [&](const Image& img) {
    for (const KernelInfo& k : img.kernels)
      if (std::find(names.begin(), names.end(), k.name) == names.end()) names.push_back(k.name);
  };
  switch (detect_kind(image)) {
    case ImageKind::Cubin: add(parse_cubin(image)); break;
    case ImageKind::Ptx: add(parse_ptx(image)); break;
    case ImageKind::Fatbin:
      for (const FatbinEntry& e : parse_fatbin(image)) {
        if (e.kind == ImageKind::Cubin) add(parse_cubin(e.bytes));
        if (e.kind == ImageKind::Ptx) add(parse_ptx(e.bytes));
      }
      break;
    default: input_error(fmt::format("not a cubin, fatbin or PTX ({} bytes)", image.size()));
  }
  return names;
}

}  // namespace kerncap::cubin
