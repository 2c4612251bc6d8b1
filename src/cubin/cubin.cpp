// Placeholder until the ELF/fatbin reader lands.
#include "cubin/cubin.hpp"

#include "common/error.hpp"

namespace kerncap::cubin {
const char* to_string(ImageKind k) {
  switch (k) {
    case ImageKind::Cubin: return "cubin";
    case ImageKind::Fatbin: return "fatbin";
    case ImageKind::Ptx: return "ptx";
    default: return "unknown";
  }
}
ImageKind detect_kind(std::span<const uint8_t>) { return ImageKind::Unknown; }
const KernelInfo* Image::find_kernel(std::string_view) const { return nullptr; }
Image parse_cubin(std::span<const uint8_t>) { fail(ErrorKind::Internal, "cubin reader not implemented"); }
std::vector<FatbinEntry> parse_fatbin(std::span<const uint8_t>) { fail(ErrorKind::Internal, "fatbin reader not implemented"); }
Image parse_image(std::span<const uint8_t>, int) { fail(ErrorKind::Internal, "image reader not implemented"); }
std::vector<std::string> kernel_names(std::span<const uint8_t>) { return {}; }
}  // namespace kerncap::cubin
