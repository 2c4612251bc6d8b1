#pragma once
// Reading NVIDIA code objects offline: cubin (ELF), fatbin containers and PTX text.
// No CUDA needed. Used by the capture library (which kernels does an image hold?),
// replay (does a --cubin variant hold the kernel, with the same parameter layout?),
// `kerncap info`, and later lint/diff.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kerncap::cubin {

enum class ImageKind { Cubin, Fatbin, Ptx, Unknown };
const char* to_string(ImageKind k);  // "cubin" | "fatbin" | "ptx" | "unknown"
ImageKind detect_kind(std::span<const uint8_t> image);

struct ParamInfo {
  uint32_t ordinal = 0;
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct KernelInfo {
  std::string name;              // mangled, as in the symbol table
  std::vector<ParamInfo> params; // from .nv.info.<name> EIATTR_KPARAM_INFO, sorted by ordinal
  uint32_t param_bytes = 0;      // EIATTR_PARAM_CBANK size, or end of the last parameter
  int registers = -1;            // EIATTR_REGCOUNT (in .nv.info) or -1 when absent
  int shared_static_bytes = -1;  // size of .nv.shared.<name>, 0 when none
  int local_bytes = -1;          // EIATTR_CRS_STACK_SIZE / frame size when known
  int max_threads = -1;          // EIATTR_MAX_THREADS (launch bounds) when present
  uint64_t code_bytes = 0;       // size of .text.<name>
};

struct GlobalVar {
  std::string name;
  uint64_t size = 0;
  bool constant = false;     // __constant__ (.nv.constant*), else __device__ (.nv.global*)
  std::string section;
};

struct Image {
  ImageKind kind = ImageKind::Unknown;
  int sm = 0;                  // e.g. 90 for sm_90 (from ELF e_flags), 0 if unknown
  std::vector<KernelInfo> kernels;
  std::vector<GlobalVar> globals;
  const KernelInfo* find_kernel(std::string_view mangled) const;
};

// One entry of a fatbin container.
struct FatbinEntry {
  ImageKind kind = ImageKind::Unknown;  // Cubin or Ptx
  int sm = 0;
  bool compressed = false;
  std::vector<uint8_t> bytes;  // decompressed when the entry was compressed and we could
};

// Parse a cubin. Throws kerncap::Error(Input) on a malformed ELF.
Image parse_cubin(std::span<const uint8_t> elf);
// Split a fatbin into entries. Throws Error(Input) when malformed.
std::vector<FatbinEntry> parse_fatbin(std::span<const uint8_t> fatbin);
// Any image kind. For a fatbin, the cubin for `sm` (or the closest lower one) is used;
// for PTX only kernel names are known (.entry), no resources.
Image parse_image(std::span<const uint8_t> image, int sm = 0);
// Every kernel name an image of any kind holds (all cubins of a fatbin, PTX .entry names).
std::vector<std::string> kernel_names(std::span<const uint8_t> image);

}  // namespace kerncap::cubin
