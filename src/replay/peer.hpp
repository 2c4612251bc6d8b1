#pragma once
// Memory of other GPUs in a capture. A kernel launched on device A may read and write
// memory of device B (peer access, cuMemMap of B's memory): the capture took those regions
// like any other and tagged each with its device (format::Region::device). Replay restores
// every region on the one replay device at its captured virtual address (or relocates it
// when that is taken and relocation is allowed): the kernel reads the same bytes at the
// same addresses, only over local HBM instead of NVLink/PCIe, so results are faithful and
// time is the local-memory time. What cannot be made faithful is refused: NCCL's own
// kernels (names/collective.hpp), whose peers would have to run too.
#include <string>

#include "format/manifest.hpp"

namespace kerncap::replay {

// Throws Error(Input) for a capture whose replay cannot mean what the application did.
void refuse_unreplayable(const format::Manifest& m);

// "" when every region is the launch's own; else one line for the user: how many regions,
// how many bytes, from which devices, and what the replay does with them.
std::string peer_note(const format::Manifest& m, int replay_ordinal);

}  // namespace kerncap::replay
