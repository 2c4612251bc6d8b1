#include "capture/gpu_scan.hpp"

#include <algorithm>
#include <chrono>

#include "capture/scan_image.hpp"
#include "common/driver.hpp"
#include "common/error.hpp"

namespace kerncap::capture {
namespace {

// Signatures per kernel launch: 8 MiB of device memory, 4 GiB of 4 KiB chunks per pass.
constexpr uint64_t kBatchChunks = uint64_t{1} << 20;
// Resident blocks per SM for the scan (256 threads each): enough warps to keep the loads of
// a grid-stride walk in flight on every SM.
constexpr int kBlocksPerSm = 8;

static_assert(scan_chunk(4096) == 65536 && scan_chunk(65536) == 65536 && scan_chunk(1u << 20) == (1u << 20));
static_assert(scan_chunk(24) % 24 == 0 && scan_chunk(24) >= 65536);

}  // namespace

std::unique_ptr<GpuScanner> GpuScanner::create(std::string* why) {
  const auto image = scan_image();
  if (image.empty()) {
    *why = "kerncap was built without nvcc (no device scan)";
    return nullptr;
  }
  std::unique_ptr<GpuScanner> s(new GpuScanner);
  try {
    KC_CU(cuCtxGetDevice(&s->device_));
    KC_CU(cuModuleLoadData(&s->module_, image.data()));
    KC_CU(cuModuleGetFunction(&s->function_, s->module_, kScanFunction));
    KC_CU(cuModuleGetFunction(&s->reach_, s->module_, kReachFunction));
    KC_CU(cuStreamCreate(&s->stream_, CU_STREAM_NON_BLOCKING));
    KC_CU(cuMemAlloc(&s->out_, kBatchChunks * sizeof(uint64_t)));
    s->out_chunks_ = kBatchChunks;
    int sms = 0;
    KC_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, s->device_));
    s->blocks_ = static_cast<unsigned>(std::max(1, sms) * kBlocksPerSm);
    // Signatures come back through pinned memory: a pageable copy of 100+ MiB of them (80 GB
    // in 4 KiB chunks) would cost more than the scan. Without it, they are copied pageable.
    for (int k = 0; k < 2; ++k) {
      void* pinned = nullptr;
      if (KC_CU_TRY(cuMemAllocHost(&pinned, kBatchChunks * sizeof(uint64_t))) != CUDA_SUCCESS) break;
      s->pinned_[k] = static_cast<uint64_t*>(pinned);
      KC_CU(cuEventCreate(&s->copied_[k], CU_EVENT_DISABLE_TIMING));
    }
  } catch (const std::exception& e) {
    *why = e.what();
    return nullptr;  // the destructor releases what was made
  }
  return s;
}

GpuScanner::~GpuScanner() {
  for (CUdeviceptr p : {lo_, hi_, hit_})
    if (p) driver().cuMemFree(p);
  if (out_) driver().cuMemFree(out_);
  for (int k = 0; k < 2; ++k) {
    if (pinned_[k]) driver().cuMemFreeHost(pinned_[k]);
    if (copied_[k]) driver().cuEventDestroy(copied_[k]);
  }
  if (stream_) driver().cuStreamDestroy(stream_);
  if (module_) driver().cuModuleUnload(module_);
}

bool GpuScanner::can_scan(format::MemKind kind, uint64_t address) const {
  using format::MemKind;
  if (address % 8 != 0) return false;
  if (kind != MemKind::Device && kind != MemKind::Pitch && kind != MemKind::Async && kind != MemKind::Vmm &&
      kind != MemKind::Global)
    return false;
  int ordinal = -1;
  if (KC_CU_TRY(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address)) != CUDA_SUCCESS ||
      ordinal != static_cast<int>(device_))
    return false;
  if (kind == MemKind::Vmm) {
    CUmemLocation here{};
    here.type = CU_MEM_LOCATION_TYPE_DEVICE;
    here.id = static_cast<int>(device_);
    unsigned long long flags = 0;
    if (!driver().cuMemGetAccess || KC_CU_TRY(cuMemGetAccess(&flags, &here, address)) != CUDA_SUCCESS ||
        (flags != CU_MEM_ACCESS_FLAGS_PROT_READ && flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
      return false;
  }
  return true;
}

std::vector<uint64_t> GpuScanner::scan(uint64_t address, uint64_t size, uint32_t chunk) {
  const uint64_t chunks = (size + chunk - 1) / chunk;
  std::vector<uint64_t> sig;
  if (!pinned_[1]) {  // no page-locked memory: one batch at a time, copied pageable
    sig.resize(chunks);
    for (uint64_t first = 0; first < chunks; first += out_chunks_) {
      const uint64_t n = launch(address, size, chunk, first);
      KC_CU(cuMemcpyDtoHAsync(sig.data() + first, out_, n * sizeof(uint64_t), stream_));
      KC_CU(cuStreamSynchronize(stream_));
    }
    return sig;
  }
  // Two page-locked buffers in turn: while the host appends batch k's signatures, the GPU
  // scans batch k + 1 (one stream orders each copy out of out_ before the next scan into it).
  sig.reserve(chunks);
  uint64_t pending_n = 0;
  int turn = 0;
  for (uint64_t first = 0; first < chunks || pending_n; first += out_chunks_) {
    uint64_t n = 0;
    if (first < chunks) {
      n = launch(address, size, chunk, first);
      KC_CU(cuMemcpyDtoHAsync(pinned_[turn], out_, n * sizeof(uint64_t), stream_));
      KC_CU(cuEventRecord(copied_[turn], stream_));
    }
    if (pending_n) {
      const auto t0 = std::chrono::steady_clock::now();
      KC_CU(cuEventSynchronize(copied_[turn ^ 1]));
      waited_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      sig.insert(sig.end(), pinned_[turn ^ 1], pinned_[turn ^ 1] + pending_n);
    }
    pending_n = n;
    turn ^= 1;
  }
  return sig;
}

uint64_t GpuScanner::launch(uint64_t address, uint64_t size, uint32_t chunk, uint64_t first) {
  const uint64_t chunks = (size + chunk - 1) / chunk;
  const uint64_t n = std::min(out_chunks_, chunks - first);
  const uint64_t offset = first * chunk;
  CUdeviceptr base = address + offset;
  unsigned long long bytes = std::min<uint64_t>(size - offset, n * chunk);
  unsigned chunk_arg = chunk;
  CUdeviceptr out = out_;
  unsigned long long count = n;
  void* args[] = {&base, &bytes, &chunk_arg, &out, &count};
  const auto blocks = static_cast<unsigned>(std::min<uint64_t>(blocks_, (n + kWarpsPerBlock - 1) / kWarpsPerBlock));
  KC_CU(cuLaunchKernel(function_, blocks, 1, 1, kWarpsPerBlock * 32, 1, 1, 0, stream_, args, nullptr));
  return n;
}

void GpuScanner::set_ranges(const RangeIndex& index) {
  const auto& sorted = index.sorted();
  order_ = index.order();
  std::vector<uint64_t> lo, hi;
  for (const auto& r : sorted) {
    lo.push_back(r.base);
    hi.push_back(r.base + r.size);
  }
  for (CUdeviceptr* p : {&lo_, &hi_, &hit_})
    if (*p) {
      driver().cuMemFree(*p);
      *p = 0;
    }
  if (sorted.empty()) return;
  KC_CU(cuMemAlloc(&lo_, lo.size() * 8));
  KC_CU(cuMemAlloc(&hi_, hi.size() * 8));
  KC_CU(cuMemAlloc(&hit_, lo.size() * 4));
  KC_CU(cuMemcpyHtoD(lo_, lo.data(), lo.size() * 8));
  KC_CU(cuMemcpyHtoD(hi_, hi.data(), hi.size() * 8));
}

std::vector<size_t> GpuScanner::pointers_in(uint64_t address, uint64_t size) {
  std::vector<size_t> out;
  if (order_.empty() || size < 8) return out;
  const unsigned n = static_cast<unsigned>(order_.size());
  KC_CU(cuMemsetD8Async(hit_, 0, n * 4, stream_));
  CUdeviceptr base = address, lo = lo_, hi = hi_, hit = hit_;
  unsigned long long bytes = size;
  unsigned count = n;
  void* args[] = {&base, &bytes, &lo, &hi, &count, &hit};
  // Enough blocks to fill the GPU; each thread walks the region with a grid stride.
  const uint64_t blocks = std::min<uint64_t>((size / 8 + 255) / 256, 4096);
  KC_CU(cuLaunchKernel(reach_, static_cast<unsigned>(blocks), 1, 1, 256, 1, 1, 0, stream_, args, nullptr));
  std::vector<uint32_t> flags(n);
  KC_CU(cuMemcpyDtoHAsync(flags.data(), hit_, n * 4, stream_));
  KC_CU(cuStreamSynchronize(stream_));
  for (unsigned k = 0; k < n; ++k)
    if (flags[k]) out.push_back(order_[k]);
  return out;
}

}  // namespace kerncap::capture
