#include "replay/uniform_check.hpp"

#include <algorithm>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "replay/uniform_image.hpp"

namespace kerncap::replay {
namespace {

constexpr const char* kFunction = "kerncap_uniform";
constexpr const char* kEqualFunction = "kerncap_equal";
// Answers per launch: 4 MiB of device memory, 64 GiB of 64 KiB blocks per pass.
constexpr uint64_t kBatchBlocks = uint64_t{1} << 20;
constexpr unsigned kWarpsPerBlock = 8;  // uniform_check.cu's kThreads / 32
constexpr int kBlocksPerSm = 8;         // resident blocks per SM: loads in flight on every SM

}  // namespace

std::unique_ptr<UniformCheck> UniformCheck::create(std::string* why) {
  const auto image = uniform_image();
  if (image.empty()) {
    *why = "kerncap was built without nvcc (no device comparison)";
    return nullptr;
  }
  std::unique_ptr<UniformCheck> u(new UniformCheck);
  try {
    KC_CU(cuModuleLoadData(&u->module_, image.data()));
    KC_CU(cuModuleGetFunction(&u->function_, u->module_, kFunction));
    // An image without it (never ours): the comparison reads back what it cannot vouch for.
    if (KC_CU_TRY(cuModuleGetFunction(&u->equal_, u->module_, kEqualFunction)) != CUDA_SUCCESS) u->equal_ = nullptr;
    CUdevice dev = 0;
    KC_CU(cuCtxGetDevice(&dev));
    int sms = 0;
    KC_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    u->grid_ = static_cast<unsigned>(std::max(1, sms) * kBlocksPerSm);
  } catch (const std::exception& e) {
    *why = e.what();
    return nullptr;  // the destructor releases what was made
  }
  return u;
}

UniformCheck::~UniformCheck() {
  // Never throws: a failing release is logged (as Session::release does).
  auto release = [](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) log::warn("{}", cu_error_text(r, what, __FILE__, __LINE__));
  };
  if (out_) release(driver().cuMemFree(out_), "cuMemFree");
  for (const CUdeviceptr p : expected_alloc_) release(driver().cuMemFree(p), "cuMemFree");
  if (module_) release(driver().cuModuleUnload(module_), "cuModuleUnload");
}

std::vector<uint32_t> UniformCheck::answers(
    CUfunction function, const CompareGrid& g, CUstream stream,
    const std::function<std::vector<void*>(unsigned long long&, unsigned long long&, unsigned long long&)>& args) {
  const uint64_t total = g.blocks();
  std::vector<uint32_t> answers(total);
  if (total == 0) return answers;
  const uint64_t want = std::min(total, kBatchBlocks);
  if (out_blocks_ < want) {
    if (out_) KC_CU(cuMemFree(out_));
    out_ = 0;
    out_blocks_ = 0;
    KC_CU(cuMemAlloc(&out_, want * sizeof(uint32_t)));
    out_blocks_ = want;
  }
  for (uint64_t first = 0; first < total; first += out_blocks_) {
    unsigned long long from = first, count = std::min(out_blocks_, total - first);
    unsigned long long out = out_;
    std::vector<void*> a = args(from, count, out);
    const unsigned grid =
        static_cast<unsigned>(std::min<uint64_t>(grid_, (count + kWarpsPerBlock - 1) / kWarpsPerBlock));
    KC_CU(cuLaunchKernel(function, grid, 1, 1, kWarpsPerBlock * 32, 1, 1, 0, stream, a.data(), nullptr));
    KC_CU(cuMemcpyDtoHAsync(answers.data() + first, out_, count * sizeof(uint32_t), stream));
    KC_CU(cuStreamSynchronize(stream));  // the next pass reuses out_, and answers is pageable
  }
  return answers;
}

std::vector<uint32_t> UniformCheck::run(CUdeviceptr piece, const CompareGrid& g, CUstream stream) {
  unsigned long long base = piece, len = g.end - g.begin, step = g.step;
  unsigned block = static_cast<unsigned>(g.block);
  return answers(function_, g, stream, [&](unsigned long long& from, unsigned long long& count, unsigned long long& out) {
    return std::vector<void*>{&base, &len, &step, &block, &from, &count, &out};
  });
}

std::vector<uint32_t> UniformCheck::equal(CUdeviceptr piece, CUdeviceptr expected, const CompareGrid& g,
                                          CUstream stream) {
  if (!equal_) fail(ErrorKind::Internal, "the device comparison has no kerncap_equal");
  unsigned long long base = piece, exp = expected, len = g.end - g.begin, step = g.step;
  unsigned block = static_cast<unsigned>(g.block);
  return answers(equal_, g, stream, [&](unsigned long long& from, unsigned long long& count, unsigned long long& out) {
    return std::vector<void*>{&base, &exp, &len, &step, &block, &from, &count, &out};
  });
}

bool UniformCheck::keep_expected(const std::vector<std::vector<uint8_t>>& regions,
                                 const std::vector<uint64_t>& addresses, std::string* why) {
  if (!equal_) {
    *why = "the device check has no equality kernel";
    return false;
  }
  if (!expected_.empty()) return true;
  std::vector<CUdeviceptr> alloc, at;
  auto undo = [&] {
    for (const CUdeviceptr p : alloc) (void)KC_CU_TRY(cuMemFree(p));
  };
  for (size_t i = 0; i < regions.size(); ++i) {
    CUdeviceptr p = 0;
    // 16 bytes more: the copy starts at the region's own address modulo 16, so that the
    // kernel reads both with aligned 16-byte loads.
    if (const CUresult r = KC_CU_TRY(cuMemAlloc(&p, regions[i].size() + 16)); r != CUDA_SUCCESS) {
      *why = cu_error_text(r, "cuMemAlloc for the expected bytes", __FILE__, __LINE__);
      undo();
      return false;
    }
    alloc.push_back(p);
    const CUdeviceptr dst = p + (i < addresses.size() ? addresses[i] % 16 : 0);
    if (!regions[i].empty()) {
      if (const CUresult r = KC_CU_TRY(cuMemcpyHtoD(dst, regions[i].data(), regions[i].size()));
          r != CUDA_SUCCESS) {
        *why = cu_error_text(r, "cuMemcpyHtoD of the expected bytes", __FILE__, __LINE__);
        undo();
        return false;
      }
    }
    at.push_back(dst);
  }
  expected_alloc_ = std::move(alloc);
  expected_ = std::move(at);
  return true;
}

}  // namespace kerncap::replay
