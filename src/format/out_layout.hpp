#pragma once
// The names inside a reproducer directory OUT, in one place. Who writes what:
//
//   capture/                 the capture (format/capture_dir.hpp), published by CaptureWriter
//   capture.partial-<pid>/   a capture being written (renamed to capture/ when complete)
//   capture.failed           one line: why the last capture failed (its partial directory
//                            was removed); removed when a capture completes
//   .kerncap/                the launcher's and the library's working state:
//     claim                  the pid of the one process that took the capture
//     rank-slot-<n>          `extract --rank` without launcher variables: the pid of the
//                            process that was the nth to initialise CUDA (format/rank.hpp)
//     events-<pid>.jsonl     the library's live report (format/events.hpp)
//     images/                every loaded code image (Config::dump_images, debugging)
//   triton/                  what the Triton shim recorded (records/, sources/)
//   kernel_variant.py        Triton: the editable kernel        (python/kerncap/triton_repro)
//   reproducer.py            Triton: re-JITs the variant, writes candidate.cubin
//   kerncap_repro/           Triton: the reproducer's runtime package
//   candidate.cubin/.json    Triton: the variant's image and its launch description
//   compare.json             the comparison spec (dtypes, tolerances) the replay engine reads
//   kernel_variant.cu, src/  CUDA: the editable translation unit and its mirrored includes
//   kernel_instance.cu       CUDA: a unit that builds only the captured template instantiation
//   compile.json             CUDA: the original compile command, rewritten to the mirror
//   optimized.cubin          CUDA: the variant `make recompile` builds
//   Makefile, README.md      the reproducer project (src/reproducer)
//
// Several targets in one run (extract/targets.hpp): OUT holds targets.json, .kerncap/ and
// triton/ of the run, and one directory as above per target.
//
// `extract --force` deletes only what one extract writes about the previous kernel and can
// rewrite from the application (force_replaced); the user's edits (kernel_variant.cu, src/,
// kernel_instance.cu, optimized.cubin) are left to the generator, which moves them aside.
// compare.json goes: its spans name the previous capture's addresses, and a stale one would
// compare the new kernel's memory with the wrong types.
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace kerncap::format::out {

inline constexpr std::string_view kCapture = "capture";
inline constexpr std::string_view kPartialPrefix = "capture.partial-";
inline constexpr std::string_view kCaptureFailed = "capture.failed";  // one line: why the last capture failed
inline constexpr std::string_view kState = ".kerncap";
inline constexpr std::string_view kClaim = "claim";
inline constexpr std::string_view kRankSlotPrefix = "rank-slot-";
inline constexpr std::string_view kEventsPrefix = "events-";
inline constexpr std::string_view kEventsSuffix = ".jsonl";
inline constexpr std::string_view kImageDump = "images";
inline constexpr std::string_view kTriton = "triton";
inline constexpr std::string_view kTritonRecords = "records";
// Written by the Triton generator (python/kerncap/triton_repro.py) into OUT/triton/, read by
// the reproducer's runtime: the launch plan and the kernel-name map.
inline constexpr std::string_view kTritonLaunchPlan = "launch.json";
inline constexpr std::string_view kTritonNameMap = "name_map.json";
inline constexpr std::string_view kKernelVariantPy = "kernel_variant.py";
inline constexpr std::string_view kReproducerPy = "reproducer.py";
inline constexpr std::string_view kReproRuntime = "kerncap_repro";
inline constexpr std::string_view kCandidateCubin = "candidate.cubin";
inline constexpr std::string_view kCandidateJson = "candidate.json";
inline constexpr std::string_view kCompareSpec = "compare.json";
inline constexpr std::string_view kKernelVariantCu = "kernel_variant.cu";
inline constexpr std::string_view kMirrorDir = "src";
// An editable copy of a library header that defines the kernel (Thrust, CUB), at its include
// path; `make recompile` puts this folder first on the include path (-Ilibrary).
inline constexpr std::string_view kLibraryDir = "library";
inline constexpr std::string_view kKernelInstanceCu = "kernel_instance.cu";
inline constexpr std::string_view kCompileJson = "compile.json";
inline constexpr std::string_view kOptimizedCubin = "optimized.cubin";
inline constexpr std::string_view kMakefile = "Makefile";
inline constexpr std::string_view kReadme = "README.md";
inline constexpr std::string_view kTargetsIndex = "targets.json";
inline constexpr std::string_view kRegimesIndex = "regimes.json";  // extract --regimes (regimes_index.hpp)
// extract --regimes over several kernels: which kernel set is in which OUT/KK-<name>/ (regime_kernels.hpp)
inline constexpr std::string_view kRegimeKernelsIndex = "regime-kernels.json";

namespace fs = std::filesystem;

inline fs::path capture_dir(const fs::path& out) { return out / kCapture; }
inline fs::path failure_note(const fs::path& out) { return out / kCaptureFailed; }
inline fs::path partial_dir(const fs::path& out, long pid) {
  return out / (std::string(kPartialPrefix) + std::to_string(pid));
}
inline fs::path state_dir(const fs::path& out) { return out / kState; }
inline fs::path claim_file(const fs::path& out) { return state_dir(out) / kClaim; }
inline fs::path rank_slot_file(const fs::path& out, unsigned long long n) {
  return state_dir(out) / (std::string(kRankSlotPrefix) + std::to_string(n));
}
inline fs::path image_dump_dir(const fs::path& out) { return state_dir(out) / kImageDump; }
inline fs::path events_file(const fs::path& out, long pid) {
  return state_dir(out) / (std::string(kEventsPrefix) + std::to_string(pid) + std::string(kEventsSuffix));
}
inline fs::path triton_dir(const fs::path& out) { return out / kTriton; }

inline bool is_partial(std::string_view name) { return name.starts_with(kPartialPrefix); }
inline bool is_events_file(std::string_view name) {
  return name.starts_with(kEventsPrefix) && name.ends_with(kEventsSuffix);
}

// The entries of OUT that `extract --force` removes before a new capture.
inline constexpr std::string_view kForceReplaced[] = {kCapture,          kCaptureFailed,  kState,           kTriton,
                                                      kKernelVariantPy,  kReproducerPy,   kReproRuntime,
                                                      kCandidateCubin,   kCandidateJson,  kCompareSpec,
                                                      kTargetsIndex,     kRegimesIndex,  kRegimeKernelsIndex};
inline bool force_replaced(std::string_view name) {
  if (is_partial(name)) return true;
  for (auto n : kForceReplaced)
    if (n == name) return true;
  return false;
}

}  // namespace kerncap::format::out
