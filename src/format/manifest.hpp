#pragma once
// The capture manifest: the one contract between the injected library and every offline
// tool. Written as capture/manifest.json; `format_version` is checked on read.
//
// Files in a capture directory (all paths relative to it):
//   manifest.json        this structure
//   params.bin           the launch's parameter buffer, exactly as the kernel sees it
//   image/<hash>.<kind>  the code object that holds the kernel (cubin, fatbin or ptx)
//   mem/<id>.bin         BEFORE: each region's bytes just before the launch (versions 1, 2)
//   chunks/<hash>.<zst|raw>  BEFORE from version 3: the stored bytes in content-addressed
//                        chunks (format/chunk_store.hpp), here or in a shared store
//   after.bin            AFTER: the byte runs the launch changed, concatenated (see AfterRun)
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/textures.hpp"

namespace kerncap::format {

// 4: CUDA arrays, texture and surface objects (Manifest::textures, regions of kind array);
//    written only by captures that have them, so others stay readable by older kerncaps.
// 3: a region's stored bytes are a list of compressed, content-addressed chunks
//    (Region::chunks) instead of a file, and may have been pruned (Region::pruned).
// 2: regions may be sparse (Region::stored); 1 is still read (every region stored whole).
inline constexpr int kFormatVersion = 4;
inline constexpr int kOldestFormatVersion = 1;
inline constexpr const char* kFormatName = "kerncap-capture";

// What kind of memory a region was in the application. Replay restores every kind as
// device memory at the same virtual address: the kernel cannot tell the difference.
// Array: the contents of a CUDA array (textures.hpp), which has no address; its base is a
// made-up one at or above kArrayRegionBase.
enum class MemKind { Device, Pitch, Async, Managed, HostMapped, HostRegistered, Vmm, Global, Array };
std::string to_string(MemKind k);
MemKind mem_kind_from_string(const std::string& s);

// A run of a region's BEFORE bytes kept in its file. The runs of a sparse region lie in the
// file back to back in offset order; every byte of the region outside them was zero.
struct StoredRun {
  uint64_t offset = 0;  // region-relative
  uint64_t size = 0;
};

// A piece of a region's stored bytes (the stored runs back to back) kept as one file named
// by the XXH3-128 of its bytes: chunks/<hash>.zst (a zstd frame) when `stored` < `size`,
// chunks/<hash>.raw (the bytes as they are) when `stored` == `size`.
struct ChunkRef {
  uint64_t hash_hi = 0, hash_lo = 0;  // XXH3-128 of the uncompressed bytes
  uint64_t size = 0;                  // uncompressed bytes
  uint64_t stored = 0;                // bytes of its file
  bool raw() const { return stored == size; }
  bool operator==(const ChunkRef&) const = default;
};

struct Region {
  uint32_t id = 0;
  MemKind kind = MemKind::Device;
  uint64_t base = 0;     // address in the application
  uint64_t size = 0;     // bytes captured
  std::string file;      // BEFORE bytes, mem/<id>.bin
  uint64_t xxh64 = 0;    // hash of the BEFORE bytes (checked on read when asked)
  std::string global;    // for MemKind::Global: the symbol name (address differs per load)
  // The CUDA device ordinal (in the application) whose memory this is; -1: not recorded
  // (host or managed memory, a global, a capture from before multi-GPU support). A device
  // other than Manifest::device_ordinal is peer memory the kernel reached (docs/replay.md).
  int device = -1;
  // None: the file holds the whole region. Else the region is sparse and the file holds
  // only these runs (none at all when the region was all zeros).
  std::optional<std::vector<StoredRun>> stored;
  // Not captured: no 8-byte word of the parameters, the module globals or a region reachable
  // from them points into it (the capture's closure). Nothing is stored; replay fills it
  // with kOmittedFill, so a kernel that does read it gives itself away with a FAIL.
  bool omitted = false;
  // Version 3: the stored bytes (the runs back to back) as chunks, in order; `file` is empty.
  std::vector<ChunkRef> chunks;
  // Version 3, after `kerncap prune`: ranges the footprint shows the launch never touches,
  // in offset order, apart from the stored runs. Their bytes are gone; replay fills them
  // with kOmittedFill so a read the footprint missed gives itself away with a FAIL.
  std::vector<StoredRun> pruned;
};

inline constexpr uint8_t kOmittedFill = 0xCB;

// Bytes of a region `kerncap prune` dropped.
uint64_t pruned_bytes(const Region& r);

// Bytes of the region's file: the stored runs of a sparse region, else the whole region.
uint64_t stored_bytes(const Region& r);

// A run of bytes the launch changed: region-relative offset, stored in after.bin.
struct AfterRun {
  uint32_t region = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t file_offset = 0;
};

struct ParamSlot {
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct LaunchAttr {
  int id = 0;               // CUlaunchAttributeID
  std::string name;         // readable, for `kerncap info`
  std::vector<uint8_t> raw; // the CUlaunchAttributeValue bytes
};

struct FuncAttr {
  int id = 0;  // CUfunction_attribute that replay re-applies (max dynamic smem, carveout...)
  std::string name;
  int value = 0;
};

struct Manifest {
  int format_version = kFormatVersion;
  std::string tool_version;
  nlohmann::json config;  // the effective KERNCAP_* configuration of the capture

  // Where it came from.
  int pid = 0;
  std::string command;

  // Device.
  int device_ordinal = 0;
  std::string device_name;
  int cc_major = 0, cc_minor = 0;
  int driver_version = 0;
  std::string device_uuid;  // "GPU-xxxxxxxx-...", as nvidia-smi -L prints it; "" in older captures

  // Kernel and launch.
  std::string mangled_name;
  std::string demangled_name;
  uint64_t dispatch = 0;      // index among launches matching the pattern
  uint64_t launch_index = 0;  // index among all launches of the process
  std::string launch_api;     // cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_mem_bytes = 0;
  bool cooperative = false;
  std::array<uint32_t, 3> cluster{0, 0, 0};  // 0 = no cluster attribute
  std::vector<LaunchAttr> launch_attrs;
  std::vector<FuncAttr> func_attrs;

  // Parameters.
  std::string params_file = "params.bin";
  uint64_t params_size = 0;
  std::string params_source;  // "kernelParams" or "extra"
  std::vector<ParamSlot> params;

  // Code.
  std::string image_file;  // image/<hash>.cubin
  std::string image_kind;  // cubin | fatbin | ptx
  uint64_t image_hash = 0;

  // Memory.
  std::vector<Region> regions;
  std::string after_file = "after.bin";
  std::vector<AfterRun> after;
  uint32_t chunk_bytes = 4096;  // granularity of change detection

  // Version 3: where the chunks are. Absent (false): all under chunks/ in the capture
  // directory. True: written to a shared store (extract --store); readers are given its
  // directory (--store or KERNCAP_STORE), never a path from the manifest. `store_hint` is
  // the directory it had at capture, for messages only.
  bool external_store = false;
  std::string store_hint;

  // Capture statistics.
  uint64_t before_bytes = 0;
  uint64_t after_bytes = 0;
  double capture_seconds = 0;

  // Version 4: CUDA arrays, texture and surface objects the launch's parameters name.
  Textures textures;

  // In-app time: the median GPU duration (ns) of the application's launches of this kernel
  // with this grid, block and dynamic shared memory, the first and the captured one left out
  // while others remain (CUPTI kernel records); absent when unknown.
  // `in_app_samples`: launches the median is over; `in_app_launches`: launches of that shape
  // recorded up to the capture, from when the records started (the first match, or 1024
  // matches before a far dispatch; 1: the median is that one launch). Both 0 in captures
  // that predate them.
  std::optional<double> in_app_median_ns;
  uint64_t in_app_samples = 0;
  uint64_t in_app_launches = 0;
  // Over the same launches, the median GPU time (ns) of the other kernels the application ran
  // between two launches of this one (0: a loop of this launch alone); absent when unknown
  // (older captures, a kernel launched once). Replay's --cache auto reads it.
  std::optional<double> in_app_between_ns;

  const Region* find_region(uint32_t id) const;
  // Regions whose device is known and differs from the launch's (peer memory).
  size_t peer_regions() const;
};

// What a manifest may say about a launch: the limits of every CUDA device (a value past
// them cannot have come from a real launch), and sane bounds for the rest.
inline constexpr uint32_t kMaxGridX = 0x7fffffff;  // 2^31 - 1
inline constexpr uint32_t kMaxGridYZ = 65535;
inline constexpr std::array<uint32_t, 3> kMaxBlock{1024, 1024, 64};
inline constexpr uint32_t kMaxBlockThreads = 1024;
inline constexpr uint32_t kMaxClusterDim = 1024;
inline constexpr uint32_t kMaxSharedMemBytes = 1u << 20;  // devices offer at most 228 KiB
inline constexpr uint64_t kMaxParamBytes = 1u << 16;      // CUDA allows 32,764 bytes
inline constexpr size_t kMaxParamSlots = 32764;           // a parameter has at least one byte
inline constexpr size_t kMaxLaunchAttrBytes = 64;         // sizeof(CUlaunchAttributeValue)
inline constexpr int kMaxComputeCapability = 99;          // per part, major and minor
inline constexpr int kMaxDeviceOrdinal = 1023;

// The version a manifest is written with: the oldest that can hold what it holds.
int format_version_for(const Manifest& m);

nlohmann::json to_json(const Manifest& m);
// The strict reader (manifest_read.cpp): every field of exactly its type and range, then
// check_manifest. Throws Error(Input) naming the field on anything else: a newer or unknown
// format, a missing field, a wrong type, a value out of range, an unsafe file name.
Manifest from_json(const nlohmann::json& j);
// The rules between fields (manifest_rules.cpp): launch geometry within device limits,
// parameter slots inside the parameter buffer, regions unique and non-overlapping, AFTER
// runs inside their regions and stored back to back. Offline: no file, no device.
void check_manifest(const Manifest& m);

}  // namespace kerncap::format
