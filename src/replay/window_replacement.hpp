#pragma once
// A replacement for a contiguous run of a window's operations (`kerncap window validate
// --replace FROM..TO=launches.json`, docs/window.md "Replacements"): a list of launches of new
// images whose parameters are built from the window's regions (a pointer to region R at byte
// offset O, as this replay placed it) and scalars. The fused kernel that stands in for a norm,
// a GEMM and an activation is one launch; several launches run in order on the window's stream.
//
// launches.json (read strictly: it is the user's file, but its numbers reach the driver):
//   {"launches": [{"image": "fused.cubin",       // relative to the file's directory, or absolute
//                  "kernel": "fused",             // the kernel's name in the image (mangled or not)
//                  "grid": [X, Y, Z], "block": [X, Y, Z], "shared_mem_bytes": 0,
//                  "args": [{"region": 5, "offset": 0}, {"i32": 256}, {"u32": 1}, {"i64": -1},
//                           {"u64": 7}, {"f32": 0.5}, {"f64": 1e-6}]},
//                 {"op": 4}]}                      // the window's operation 4 as captured
// An {"op": N} entry (N inside FROM..TO) runs that operation as the application did: a fused
// SiLU·multiply that replaces silu, up_proj's GEMM and mul keeps the GEMM between them.
// Arguments are packed in order with their natural alignment (pointers and 64-bit values on 8
// bytes, 32-bit ones on 4), as a kernel declared with those parameter types expects them.
#include <cuda.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "format/manifest.hpp"
#include "format/window.hpp"

namespace kerncap::replay {

struct ReplacementArg {
  enum class Kind { Pointer, I32, U32, I64, U64, F32, F64 };
  Kind kind = Kind::Pointer;
  uint32_t region = 0;   // Pointer: the region's id
  uint64_t offset = 0;   // Pointer: bytes into it
  uint64_t bits = 0;     // scalars: the value's bytes (little-endian, as the kernel reads them)
};

struct ReplacementLaunch {
  std::optional<size_t> op;  // {"op": N}: the window's operation N as captured (nothing else set)
  std::filesystem::path image;
  std::string kernel;
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t shared_mem_bytes = 0;
  std::vector<ReplacementArg> args;
};

struct Replacement {
  size_t from = 0, to = 0;  // operations [from, to] of the window, inclusive
  std::vector<ReplacementLaunch> launches;
  std::string spec;  // as the user wrote it, for messages
  // Instead of launches: the caller's own work (the C ABI's kc_window_validate: a Python callable
  // given the window's buffers), enqueued on the replay's stream in the run's place each time
  // the window runs; it must not synchronise the device. `call_name` names it in messages.
  std::function<void(CUstream)> call;
  std::string call_name;
};

// "FROM..TO=FILE": Error(Usage) for a malformed spec or a range outside the window, Error(Input)
// for a file that is not a replacement (naming the field), a region the capture lacks, an
// offset past its region's end.
Replacement read_replacement(const std::string& spec, const format::Window& w, const format::Manifest& m);
// The same from a parsed document (tests); `dir` resolves relative image paths.
Replacement replacement_from_json(const nlohmann::json& j, size_t from, size_t to, const std::filesystem::path& dir,
                                  const format::Manifest& m);

// The parameter buffer of `args` with pointers at `address(region id) + offset`, and its slots.
std::vector<uint8_t> pack_replacement_args(const std::vector<ReplacementArg>& args,
                                           const std::function<uint64_t(uint32_t)>& address,
                                           std::vector<format::ParamSlot>* slots);

}  // namespace kerncap::replay
