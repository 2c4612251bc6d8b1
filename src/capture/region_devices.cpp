// Asks the driver which GPU each captured allocation lives on (format::Region::device), at
// the target launch, so that peer memory is tagged in the manifest. Host and managed
// memory and module globals have no one device: left at -1.
#include "capture/region_devices.hpp"

#include "common/driver.hpp"

namespace kerncap::capture {

void tag_region_devices(std::vector<RegionState>& regions) {
  for (auto& st : regions) {
    const auto k = st.region.kind;
    if (k != format::MemKind::Device && k != format::MemKind::Pitch && k != format::MemKind::Async &&
        k != format::MemKind::Vmm)
      continue;
    int ordinal = -1;
    // A range the driver does not answer for keeps -1 (not recorded), as in older captures.
    if (KC_CU_TRY(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                        static_cast<CUdeviceptr>(st.region.base))) == CUDA_SUCCESS &&
        ordinal >= 0 && ordinal <= format::kMaxDeviceOrdinal)
      st.region.device = ordinal;
  }
}

}  // namespace kerncap::capture
