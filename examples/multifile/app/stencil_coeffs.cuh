#pragma once
// Included by app/stencil.cu with a quoted path (found next to it).
#include <mf_config.h>

namespace mf {
__constant__ float kStencil[2 * MF_RADIUS + 1] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};
}  // namespace mf
