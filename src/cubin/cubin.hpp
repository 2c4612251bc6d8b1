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
#include <string_view>
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
  std::vector<ParamInfo> params; // from .nv.info.<name> EIATTR_KPARAM_INFO(_V2), sorted by ordinal
  uint32_t param_bytes = 0;      // EIATTR_PARAM_CBANK size, or end of the last parameter
  // Where the parameters start in constant bank 0 (EIATTR_PARAM_CBANK: 0x210 on sm_90), so
  // that code reading c[0x0][0x218] reads the parameter at offset 8; 0 when absent.
  uint32_t param_cbank_offset = 0;
  int registers = -1;            // EIATTR_REGCOUNT (in .nv.info) or -1 when absent
  // The kernel's own static __shared__ bytes (what ptxas -v prints as "smem"). On sm_90+
  // a linked cubin's .nv.shared.<name> also holds the 1 KiB the system reserves at the
  // start of shared memory: that part is shared_reserved_bytes, not counted here.
  int shared_static_bytes = -1;  // 0 when the kernel has no .nv.shared.<name>
  int shared_reserved_bytes = 0;
  int local_bytes = -1;          // per-thread stack: EIATTR_MAX/MIN_STACK_SIZE, else FRAME_SIZE
  int max_threads = -1;          // EIATTR_MAX_THREADS (launch bounds, x*y*z) when present
  std::array<uint32_t, 3> cluster_dims{0, 0, 0};  // EIATTR_CTA_PER_CLUSTER (__cluster_dims__)
  uint64_t code_bytes = 0;       // size of .text.<name>
};

struct GlobalVar {
  std::string name;
  uint64_t size = 0;
  bool constant = false;     // __constant__ (.nv.constant*), else __device__ (.nv.global*)
  bool managed = false;      // __managed__ (st_other bit 0x04)
  std::string section;
};

struct Image {
  ImageKind kind = ImageKind::Unknown;  // the kind of the image given
  // What the kernels below were read from: Cubin, or Ptx (names and parameter layout only,
  // no resources). For a fatbin: the kind of the entry parse_image chose.
  ImageKind code_kind = ImageKind::Unknown;
  int sm = 0;                  // e.g. 90 for sm_90 (ELF e_flags, PTX .target), 0 if unknown
  // sm_90a-style cubin (arch-specific features; loads only on exactly that SM). e_flags do
  // not say so in CUDA 13; .nv.compat attribute 0x09 does.
  bool arch_specific = false;
  std::vector<KernelInfo> kernels;
  std::vector<GlobalVar> globals;
  const KernelInfo* find_kernel(std::string_view mangled) const;
};

// One entry of a fatbin container.
struct FatbinEntry {
  ImageKind kind = ImageKind::Unknown;  // Cubin or Ptx; Unknown for others (LTO IR = kind 8)
  uint16_t raw_kind = 0;       // the entry header's kind field: 1 PTX, 2 ELF, 8 LTO IR
  int sm = 0;
  bool compressed = false;     // stored compressed (zstd or LZ4); bytes are decompressed,
                               // except for Unknown kinds, which keep the stored bytes
  uint64_t flags = 0;          // the entry header's flags (0x2000 LZ4, 0x8000 zstd, 0x2 debug)
  std::vector<uint8_t> bytes;
};

// Parse a cubin. Throws kerncap::Error(Input) on a malformed ELF.
Image parse_cubin(std::span<const uint8_t> elf);
// Split a fatbin (one or more concatenated 0xBA55ED50 containers) into entries,
// decompressing compressed ones. Throws Error(Input) when malformed.
std::vector<FatbinEntry> parse_fatbin(std::span<const uint8_t> fatbin);
// PTX text: .entry names, parameter layout from the .param list, sm from .target.
Image parse_ptx(std::span<const uint8_t> ptx);
// Any image kind. For a fatbin, the cubin for `sm` (or the closest lower one; the highest
// when sm is 0) is used, else PTX the driver could JIT for `sm`; for PTX only kernel names
// and parameter layouts are known, no resources. Throws Error(Input) when nothing fits.
Image parse_image(std::span<const uint8_t> image, int sm = 0);
// The bytes parse_image reads for `sm`: the image itself for a cubin or PTX, the chosen
// entry of a fatbin (decompressed). Throws Error(Input) as parse_image does.
std::vector<uint8_t> code_for(std::span<const uint8_t> image, int sm = 0);
// The module globals (names as in Image::globals) that `kernel`'s code can reach in the
// code parse_image would read for `sm`: through constant-bank operands of its instructions
// (a __constant__ variable's bytes, a __device__ variable's address slot), relocations of
// its code and of the device functions it calls, and initialisers of the variables found.
// nullopt when the image cannot tell (PTX, a pre-sm_70 encoding, the kernel's code absent,
// a call to code outside the image): then take every global as used. See references.cpp.
std::optional<std::vector<std::string>> globals_used(std::span<const uint8_t> image, std::string_view kernel,
                                                     int sm = 0);
// Every kernel name an image of any kind holds (all cubins of a fatbin, PTX .entry names).
std::vector<std::string> kernel_names(std::span<const uint8_t> image);

}  // namespace kerncap::cubin
