#pragma once
// `kerncap lint`: checks of the compiled kernel of a capture (or of a variant cubin) without
// a GPU: resources from the cubin's own tables, the theoretical occupancy of the captured
// launch, the SASS instruction mix and regular-expression rules over SASS and PTX.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubin/cubin.hpp"
#include "format/capture_dir.hpp"
#include "format/kerncap_toml.hpp"
#include "lint/occupancy.hpp"
#include "lint/sass.hpp"

namespace kerncap::lint {

struct LintOptions {
  std::string cubin;          // a variant to check instead of the captured image ("" = captured)
  bool sass = true;           // disassemble (needs nvdisasm or cuobjdump)
  std::string disassembler;   // program to use instead of the search ("" = search)
  format::ArtifactChecks checks;      // limits and patterns (kerncap.toml, then flags)
};

enum class Status { Info, Pass, Fail };
const char* to_string(Status s);  // "info" | "pass" | "fail"

struct Check {
  std::string name;    // "registers", "occupancy", "required /HGMMA/"...
  Status status = Status::Info;
  std::string detail;  // "40 per thread (limit 64)"
};

struct LintReport {
  std::string kernel;          // mangled name
  std::string image;           // path of the code object read
  std::string image_kind;      // cubin | fatbin | ptx (the file's kind)
  int sm = 0;                  // the capture's device
  int code_sm = 0;             // the cubin chosen (0: PTX only, no resources)
  std::optional<cubin::KernelInfo> resources;  // absent for PTX-only images
  LaunchResources launch;
  std::optional<Occupancy> occupancy;
  std::optional<InstructionMix> mix;
  std::string disassembler;    // the tool that gave the SASS ("" when none ran)
  std::vector<Check> checks;
  bool passed() const;
};

LintReport lint(const format::Capture& capture, const LintOptions& options);

// The code object bytes lint reads SASS from and the PTX text, picked from an image of any
// kind the way the driver would for `sm` (cubin::parse_image's choice).
struct CodeObjects {
  cubin::Image image;
  std::vector<uint8_t> cubin;  // empty when the image holds no cubin for the SM
  std::string ptx;             // empty when the image holds no PTX
};
CodeObjects select_code(const std::vector<uint8_t>& image_bytes, int sm);

// The report: one line per check and a final "Result: PASS" / "Result: FAIL".
std::string result_line(const LintReport& r);  // "Result: PASS" / "Result: FAIL", in the text and the JSON
std::string to_text(const LintReport& r);
nlohmann::json to_json(const LintReport& r);

}  // namespace kerncap::lint
