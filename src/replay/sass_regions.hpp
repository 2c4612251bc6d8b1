#pragma once
// Element types of a capture's regions from its kernel's SASS (sass_types.hpp), for regions
// the signature does not type: each written region gets the one float type of the stores that
// may reach it — those whose address traces to a pointer into it, plus every store whose
// address traces to nothing (it could be anywhere). One integer, unknown or other-float store
// among them and the region stays bytes. The span typed is the region's written extent (AFTER
// runs and footprint), widened to whole elements. The spans say "sass" as their source.
//
// Reading the SASS needs the code as a cubin (a PTX image is JIT-compiled by the driver: its
// SASS cannot be read back) and a disassembler (nvdisasm, or cuobjdump -sass; lint's search):
// without either, nothing is typed and `why` says so.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/capture_dir.hpp"
#include "format/footprint.hpp"
#include "replay/compare_spec.hpp"
#include "replay/sass_types.hpp"

namespace kerncap::replay {

struct KernelSass {
  std::optional<SassFacts> facts;  // none: the SASS could not be read (why)
  std::string why;
  std::string disassembler;  // the tool that read it
};

// Disassembles the captured kernel's code (the cubin parse_image chooses for the capture's SM)
// and analyses its function. Never throws for a missing tool or an unreadable image: `why`.
KernelSass read_kernel_sass(const format::Capture& cap);

// Per region id, the region-relative [begin, end) its launch writes: the application's AFTER
// runs, and the footprint's written bytes when there is one.
using WrittenExtents = std::map<uint32_t, std::pair<uint64_t, uint64_t>>;
WrittenExtents written_extents(const format::Manifest& m, const format::Footprint* footprint);

// The typed spans SASS gives the written regions no span of `signature` lies in. `params`:
// the captured parameter buffer (pointer words of the stores' parameters).
std::vector<TypedSpan> sass_spans(const SassFacts& f, const format::Manifest& m, const std::vector<uint8_t>& params,
                                  const WrittenExtents& written, const std::vector<TypedSpan>& signature);

// "REDG.E.ADD.F64.RN.STRONG.GPU (and 2 more)": the float atomics, for the verdict's line.
std::string describe_float_atomics(const SassFacts& f);

}  // namespace kerncap::replay
