#pragma once
// What a comparison with AFTER checks, and how strictly: one default element type and
// tolerance for every byte, plus typed spans (a tensor of floats inside a byte region).
// The same spec serves `kerncap validate`, kc_compare and every reproducer, so one
// candidate gets one verdict. Tolerances left unset come from compare::default_tolerance —
// the one table; bytes and integers are exact.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.hpp"
#include "format/manifest.hpp"

namespace kerncap::replay {

struct TypedSpan {
  uint64_t base = 0, size = 0;  // captured addresses
  compare::DType dtype = compare::DType::Bytes;
  compare::Tolerance tol;
  // Where the element type came from, named in the verdict: "signature" (signature.hpp),
  // "sass" (sass_regions.hpp), the spec's source (the compare.json path, "command line",
  // the judge option "spec"), "--tolerance".
  std::string source;
};

struct CompareSpec {
  compare::DType dtype = compare::DType::Bytes;
  compare::Tolerance tol;  // resolved: explicit values or the default for dtype
  std::vector<TypedSpan> spans;
  std::string source;      // "default", "command line", or the compare.json path
};

// Per-dtype tolerances that replace compare::default_tolerance where a tolerance is not
// given explicitly (OUT/kerncap.toml [tolerances]); a dtype not in it keeps the default.
using ToleranceTable = std::map<compare::DType, compare::Tolerance>;
compare::Tolerance table_tolerance(compare::DType dtype, const ToleranceTable& table);
// Whether the table changes any tolerance: an entry equal to compare::default_tolerance (as
// the kerncap.toml extract writes lists them) changes nothing.
bool changes_defaults(const ToleranceTable& table);

// The spec for `dtype` with optional explicit tolerances (the rest from `table`, then the
// default table). Throws Error(Usage) on a negative or non-finite tolerance.
compare::Tolerance resolve_tolerance(compare::DType dtype, std::optional<double> atol, std::optional<double> rtol,
                                     const ToleranceTable& table = {});

// Parses the JSON spec (schema in include/kerncap/replay.h and docs/engine.md) and checks
// each span against the capture's regions. Throws Error(Input) naming the bad field.
CompareSpec parse_spec(const nlohmann::json& j, const format::Manifest& m, const std::string& source,
                       const ToleranceTable& table = {});

// OUT/compare.json beside OUT/capture, when the capture lies in a reproducer that has one;
// otherwise the byte-exact default.
CompareSpec default_spec(const std::filesystem::path& capture_dir, const format::Manifest& m,
                         const ToleranceTable& table = {});

// One region compared with its own tolerance (`--tolerance R:atol=A,rtol=B[,dtype=T]`): with
// a dtype, the whole region is that type; without, each typed piece of it keeps its type and
// takes the tolerances given.
struct RegionTolerance {
  uint32_t region = 0;  // the manifest's region id
  std::optional<compare::DType> dtype;
  std::optional<double> atol, rtol;
};
// "3:atol=1e-3,rtol=1e-2" or "3:dtype=fp32,atol=1e-4". Throws Error(Usage).
RegionTolerance parse_region_tolerance(const std::string& text);
// `spec` with the regions' own tolerances applied (spans replaced inside those regions).
// Throws Error(Usage) for a region the capture does not have, or one compared as bytes
// without dtype= (bytes compare exactly).
CompareSpec with_region_tolerances(const CompareSpec& spec, const std::vector<RegionTolerance>& overrides,
                                   const format::Manifest& m, const ToleranceTable& table = {});

// A region cut into consecutive pieces, each with its element type and tolerance: the typed
// spans that fall inside it (clipped) and the default between them.
struct Piece {
  uint64_t begin = 0, end = 0;  // region-relative
  compare::DType dtype = compare::DType::Bytes;
  compare::Tolerance tol;
  std::string source;  // the span's, the spec's for its own dtype between spans, "" for bytes
};
std::vector<Piece> pieces_of(const format::Region& r, const CompareSpec& spec);

}  // namespace kerncap::replay
