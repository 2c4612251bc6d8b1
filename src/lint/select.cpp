// Which cubin and PTX of an image lint reads: the entries cubin::parse_image chose.
#include <algorithm>

#include "cubin/cubin.hpp"
#include "lint/lint.hpp"

namespace kerncap::lint {

CodeObjects select_code(const std::vector<uint8_t>& bytes, int sm) {
  CodeObjects c;
  c.image = cubin::parse_image(bytes, sm);
  const cubin::ImageKind kind = cubin::detect_kind(bytes);
  if (kind == cubin::ImageKind::Cubin) {
    c.cubin = bytes;
    return c;
  }
  if (kind == cubin::ImageKind::Ptx) {
    c.ptx.assign(bytes.begin(), std::find(bytes.begin(), bytes.end(), uint8_t{0}));
    return c;
  }
  // A fatbin: parse_image chose the cubin whose SM it reports (or PTX when none fits).
  const cubin::FatbinEntry* ptx = nullptr;
  const std::vector<cubin::FatbinEntry> entries = cubin::parse_fatbin(bytes);
  for (const cubin::FatbinEntry& e : entries) {
    if (e.kind == cubin::ImageKind::Cubin && c.image.code_kind == cubin::ImageKind::Cubin && e.sm == c.image.sm &&
        c.cubin.empty())
      c.cubin = e.bytes;
    if (e.kind == cubin::ImageKind::Ptx && (sm == 0 || e.sm <= sm) && (!ptx || e.sm > ptx->sm)) {
      ptx = &e;
      c.ptx.assign(e.bytes.begin(), std::find(e.bytes.begin(), e.bytes.end(), uint8_t{0}));
    }
  }
  return c;
}

}  // namespace kerncap::lint
