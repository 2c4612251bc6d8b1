#include "capture/activity.hpp"

#include "common/log.hpp"

namespace kerncap::capture {
namespace {

// CUDA 13's CUPTI delivers the newest record layouts: Kernel10, Memcpy6, Memset4, Device5.
format::KernelRecord kernel_record(const CUpti_ActivityKernel10& r) {
  format::KernelRecord k;
  k.start_ns = r.start;
  k.end_ns = r.end;
  k.grid = {r.gridX, r.gridY, r.gridZ};
  k.block = {r.blockX, r.blockY, r.blockZ};
  k.cluster = {r.clusterX, r.clusterY, r.clusterZ};
  k.registers = r.registersPerThread;
  k.static_shared = r.staticSharedMemory;
  k.dynamic_shared = r.dynamicSharedMemory;
  k.local_per_thread = r.localMemoryPerThread;
  k.stream = r.streamId;
  k.device = r.deviceId;
  k.context = r.contextId;
  k.correlation = r.correlationId;
  k.graph_id = r.graphId;
  k.graph_node = r.graphNodeId;
  k.device_launched = r.isDeviceLaunched != 0;
  return k;
}

// Memcpy and memset records share these fields.
template <typename R>
format::MemRecord mem_record(const R& r) {
  format::MemRecord m;
  m.bytes = r.bytes;
  m.start_ns = r.start;
  m.end_ns = r.end;
  m.stream = r.streamId;
  m.device = r.deviceId;
  m.context = r.contextId;
  m.correlation = r.correlationId;
  m.graph_id = r.graphId;
  return m;
}

format::DeviceInfo device_info(const CUpti_ActivityDevice5& r) {
  format::DeviceInfo d;
  d.id = r.id;
  d.name = r.name ? r.name : "";
  d.cc_major = static_cast<int>(r.computeCapabilityMajor);
  d.cc_minor = static_cast<int>(r.computeCapabilityMinor);
  d.sms = r.numMultiprocessors;
  d.memory = r.globalMemorySize;
  return d;
}

}  // namespace

const char* copy_kind_name(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "unknown";
  }
}

void ActivityRecorder::record(const CUpti_Activity& rec) {
  switch (rec.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& r = reinterpret_cast<const CUpti_ActivityKernel10&>(rec);
      writer_.kernel(r.name ? r.name : "<unnamed kernel>", kernel_record(r));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& r = reinterpret_cast<const CUpti_ActivityMemcpy6&>(rec);
      format::MemRecord m = mem_record(r);
      m.copy_kind = copy_kind_name(r.copyKind);
      writer_.memop(m);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      format::MemRecord m = mem_record(reinterpret_cast<const CUpti_ActivityMemset4&>(rec));
      m.memset = true;
      writer_.memop(m);
      break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE:
      writer_.device(device_info(reinterpret_cast<const CUpti_ActivityDevice5&>(rec)));
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& r = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(rec);
      if (r.externalKind == kBenchmarkCorrelationKind) writer_.benchmark_call(r.correlationId);
      break;
    }
    default:
      break;
  }
}

void ActivityRecorder::drain(ActivityBuffer& buffer) noexcept {
  try {
    CUpti_Activity* rec = nullptr;
    while (buffer.next(&rec)) record(*rec);
    if (size_t dropped = buffer.dropped()) {
      log::warn("profile: CUPTI dropped {} activity records (buffers full); kernel totals will be low", dropped);
      writer_.add_dropped(dropped);
    }
  } catch (...) {
    // Out of memory while formatting: lose this buffer's records, never the application.
  }
}

}  // namespace kerncap::capture
