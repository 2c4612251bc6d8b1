// The swap decisions, fed with the argument blocks CUPTI hands over and a fake driver: which
// launches are the kernel, what gets written where, what is refused and why, and that the
// application's own structures are never written.
#include <gtest/gtest.h>

#include <map>

#include "capture/swapper.hpp"
#include "capture/tool_scope.hpp"

namespace kerncap::capture {
namespace {

const CUfunction kApp = reinterpret_cast<CUfunction>(0x1000);
const CUfunction kOther = reinterpret_cast<CUfunction>(0x2000);
const CUfunction kVariant = reinterpret_cast<CUfunction>(0x3000);
const CUcontext kCtx = reinterpret_cast<CUcontext>(0x4000);

class FakeDriver final : public SwapDriver {
 public:
  std::map<CUfunction, std::string> names{{kApp, "_Z4vaddPfS_S_i"}, {kOther, "_Z5otherPf"}};
  std::vector<format::ParamSlot> app_layout{{0, 8}, {8, 8}, {16, 8}, {24, 4}};
  std::vector<format::ParamSlot> variant_layout_v = app_layout;
  int name_calls = 0, loads = 0;
  bool load_fails = false;
  uint32_t shared_limit = 228 * 1024;

  std::string name_of(CUfunction f) override {
    ++name_calls;
    auto it = names.find(f);
    return it == names.end() ? "" : it->second;
  }
  std::vector<format::ParamSlot> layout_of(CUfunction) override { return app_layout; }
  CUfunction variant_function(const format::SwapSpec&, CUcontext, std::string* why) override {
    ++loads;
    if (load_fails) {
      *why = "the driver refused the variant image (CUDA_ERROR_INVALID_IMAGE)";
      return nullptr;
    }
    return kVariant;
  }
  std::vector<format::ParamSlot> variant_layout(CUfunction) override { return variant_layout_v; }
  bool allow_shared(CUfunction, uint32_t bytes) override { return bytes <= shared_limit; }
  CUcontext current_context() override { return kCtx; }
  bool capturing = false;
  bool stream_capturing(CUstream) override { return capturing; }
};

format::SwapSpec spec(bool apply = true) { return {"_Z4vaddPfS_S_i", "_Z4vaddPfS_S_i", "/tmp/v.cubin", apply}; }

CUpti_CallbackData entry(const void* params, CUpti_ApiCallbackSite site = CUPTI_API_ENTER) {
  CUpti_CallbackData cb{};
  cb.callbackSite = site;
  cb.functionParams = params;
  cb.context = kCtx;
  return cb;
}

TEST(Swapper, WritesTheVariantIntoEveryLaunchKindOfTheKernel) {
  FakeDriver d;
  Swapper s({spec()}, d);
  cuLaunchKernel_params p{};
  p.f = kApp;
  auto cb = entry(&p);
  EXPECT_TRUE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb));
  EXPECT_EQ(p.f, kVariant);

  CUlaunchConfig cfg{};
  cuLaunchKernelEx_params ex{};
  ex.config = &cfg;
  ex.f = kApp;
  auto cb2 = entry(&ex);
  EXPECT_TRUE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, &cb2));
  EXPECT_EQ(ex.f, kVariant);

  cuLaunchCooperativeKernel_params co{};
  co.f = kApp;
  auto cb3 = entry(&co);
  EXPECT_TRUE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, &cb3));
  EXPECT_EQ(co.f, kVariant);

  const auto r = s.report(7);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].launches, 3u);
  EXPECT_EQ(r.kernels[0].swapped, 3u);
  EXPECT_EQ(d.loads, 1) << "the variant is loaded once per context";
  EXPECT_EQ(d.name_calls, 1) << "a handle's name is asked once";
}

TEST(Swapper, LeavesOtherKernelsExitsAndItsOwnCallsAlone) {
  FakeDriver d;
  Swapper s({spec()}, d);
  cuLaunchKernel_params p{};
  p.f = kOther;
  auto cb = entry(&p);
  EXPECT_FALSE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb));
  EXPECT_EQ(p.f, kOther);
  p.f = kApp;
  auto exit_cb = entry(&p, CUPTI_API_EXIT);
  EXPECT_FALSE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &exit_cb));
  EXPECT_EQ(p.f, kApp);
  {
    ToolScope ours;  // kerncap's own driver calls (loading the variant) fire callbacks too
    auto cb2 = entry(&p);
    EXPECT_FALSE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb2));
    EXPECT_EQ(p.f, kApp);
  }
  EXPECT_EQ(s.report(1).kernels[0].launches, 0u);
}

TEST(Swapper, TheUnmodifiedArmCountsButNeverSwaps) {
  FakeDriver d;
  Swapper s({spec(false)}, d);
  cuLaunchKernel_params p{};
  p.f = kApp;
  auto cb = entry(&p);
  EXPECT_FALSE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb));
  EXPECT_EQ(p.f, kApp);
  EXPECT_EQ(d.loads, 0);
  const auto r = s.report(1);
  EXPECT_EQ(r.kernels[0].launches, 1u);
  EXPECT_EQ(r.kernels[0].swapped, 0u);
  EXPECT_TRUE(r.kernels[0].refused.empty());
}

TEST(Swapper, RefusesAVariantWithAnotherParameterLayoutAndSaysWhy) {
  FakeDriver d;
  d.variant_layout_v[3] = {24, 8};
  Swapper s({spec()}, d);
  cuLaunchKernel_params p{};
  p.f = kApp;
  auto cb = entry(&p);
  EXPECT_FALSE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb));
  EXPECT_EQ(p.f, kApp) << "the application's own kernel runs";
  const auto r = s.report(1);
  EXPECT_EQ(r.kernels[0].swapped, 0u);
  EXPECT_NE(r.kernels[0].refused.find("parameter 3 is 4 bytes at offset 24"), std::string::npos) << r.kernels[0].refused;
}

TEST(Swapper, AVariantThatCannotLoadOrTakeTheSharedMemoryIsRefused) {
  FakeDriver d;
  d.load_fails = true;
  Swapper s({spec()}, d);
  cuLaunchKernel_params p{};
  p.f = kApp;
  auto cb = entry(&p);
  EXPECT_FALSE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb));
  EXPECT_NE(s.report(1).kernels[0].refused.find("INVALID_IMAGE"), std::string::npos);

  FakeDriver d2;
  d2.shared_limit = 64 * 1024;
  Swapper s2({spec()}, d2);
  p.sharedMemBytes = 100 * 1024;
  auto cb2 = entry(&p);
  EXPECT_FALSE(s2.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb2));
  EXPECT_NE(s2.report(1).kernels[0].refused.find("102400 bytes of dynamic shared memory"), std::string::npos);
}

TEST(Swapper, GraphKernelNodesGetACopyNamingTheVariant) {
  FakeDriver d;
  Swapper s({spec()}, d);
  CUDA_KERNEL_NODE_PARAMS node{};
  node.func = nullptr;
  node.kern = reinterpret_cast<CUkernel>(kApp);  // a runtime-built node names a CUkernel
  node.gridDimX = 7;
  cuGraphAddKernelNode_v2_params p{};
  p.nodeParams = &node;
  auto cb = entry(&p);
  EXPECT_TRUE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode_v2, &cb));
  ASSERT_NE(p.nodeParams, &node) << "the application's struct is not written";
  EXPECT_EQ(node.kern, reinterpret_cast<CUkernel>(kApp));
  EXPECT_EQ(p.nodeParams->func, kVariant);
  EXPECT_EQ(p.nodeParams->kern, nullptr);
  EXPECT_EQ(p.nodeParams->gridDimX, 7u);

  CUgraphNodeParams generic{};
  generic.type = CU_GRAPH_NODE_TYPE_KERNEL;
  generic.kernel.func = kApp;
  cuGraphExecNodeSetParams_params gp{};
  gp.nodeParams = &generic;
  auto cb2 = entry(&gp);
  EXPECT_TRUE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams, &cb2));
  EXPECT_EQ(gp.nodeParams->kernel.func, kVariant);
  EXPECT_EQ(generic.kernel.func, kApp);

  CUgraphNodeParams memset_node{};
  memset_node.type = CU_GRAPH_NODE_TYPE_MEMSET;
  cuGraphAddNode_params mp{};
  mp.nodeParams = &memset_node;
  auto cb3 = entry(&mp);
  EXPECT_FALSE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode, &cb3));
  EXPECT_EQ(mp.nodeParams, &memset_node);
  EXPECT_EQ(s.report(1).kernels[0].graph_nodes, 2u);
}

TEST(Swapper, AnUnloadedModulesHandlesAndADestroyedContextsVariantsAreForgotten) {
  FakeDriver d;
  Swapper s({spec()}, d);
  cuLaunchKernel_params p{};
  p.f = kApp;
  auto cb = entry(&p);
  EXPECT_TRUE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb));
  // The module is unloaded; the same handle value now names another kernel.
  cuModuleUnload_params u{};
  auto unload = entry(&u, CUPTI_API_EXIT);
  s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, &unload);
  d.names[kApp] = "_Z5otherPf";
  p.f = kApp;
  auto cb2 = entry(&p);
  EXPECT_FALSE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb2)) << "a reused handle is asked again";
  EXPECT_EQ(p.f, kApp);
  // A destroyed context: the variant is loaded again in the next one.
  d.names[kApp] = "_Z4vaddPfS_S_i";
  cuCtxDestroy_v2_params c{};
  auto destroy = entry(&c, CUPTI_API_EXIT);
  s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2, &destroy);
  auto cb3 = entry(&p);
  EXPECT_TRUE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb3));
  EXPECT_EQ(d.loads, 2);
}

TEST(Swapper, LayoutMismatchText) {
  EXPECT_EQ(layout_mismatch({{0, 8}}, {{0, 8}}), "");
  EXPECT_EQ(layout_mismatch({}, {{0, 8}}), "") << "unknown agrees (the launcher checked what it could)";
  EXPECT_NE(layout_mismatch({{0, 8}}, {{0, 8}, {8, 4}}).find("takes 1 parameters, the variant 2"), std::string::npos);
}

}  // namespace
}  // namespace kerncap::capture

namespace kerncap::capture {
namespace {

// The device side of shadow checking, in host memory: two "allocations"; the variant's
// result is whatever the test says.
class FakeShadow final : public ShadowDriver {
 public:
  std::vector<uint8_t> y = std::vector<uint8_t>(64, 0), x = std::vector<uint8_t>(64, 1);
  static constexpr uint64_t kY = 0x10000, kX = 0x20000;
  std::vector<float> variant_y, original_y;  // what each leaves in y
  int runs = 0, releases = 0;
  std::optional<std::pair<uint64_t, uint64_t>> allocation_of(uint64_t a) override {
    if (a >= kY && a < kY + 64) return std::make_pair(kY, uint64_t{64});
    if (a >= kX && a < kX + 64) return std::make_pair(kX, uint64_t{64});
    return std::nullopt;
  }
  bool run_variant(CUfunction, const LaunchArgs&, const std::vector<ShadowRegion>& regions, std::string*) override {
    ++runs;
    seen = regions;
    return true;
  }
  bool finish_original(std::string*) override { return true; }
  bool read(size_t i, uint64_t off, uint64_t n, uint8_t* expected, uint8_t* actual) override {
    const bool is_y = seen[i].base == kY;
    for (uint64_t b = 0; b < n; ++b) {
      expected[b] = is_y ? reinterpret_cast<const uint8_t*>(original_y.data())[off + b] : x[off + b];
      actual[b] = is_y ? reinterpret_cast<const uint8_t*>(variant_y.data())[off + b] : x[off + b];
    }
    return true;
  }
  void release() override { ++releases; }
  // With device_compared: the device found all but y's first 32 bytes identical.
  bool device_compared = false;
  uint64_t host_bytes = 0;
  std::vector<std::pair<uint64_t, uint64_t>> may_differ(size_t i, uint64_t size) override {
    if (!device_compared) return {{0, size}};
    if (seen[i].base == kY) return {{0, 32}};
    return {};
  }
  std::vector<ShadowRegion> seen;
};

struct ShadowLaunch {
  uint64_t y = FakeShadow::kY + 16, x = FakeShadow::kX;  // y points inside its allocation
  float a = 2;
  int n = 16;
  void* args[4] = {&y, &x, &a, &n};
  cuLaunchKernel_params p{};
  ShadowLaunch() {
    p.f = kApp;
    p.kernelParams = args;
    p.gridDimX = 3;
    p.blockDimX = 256;
  }
};

format::SwapSpec shadow_spec(uint64_t every) {
  format::SwapSpec s = spec(false);
  s.shadow_every = every;
  s.param_dtypes = {"fp32", "fp32", "", ""};
  return s;
}

void launch(Swapper& s, ShadowLaunch& l, uint32_t correlation) {
  CUpti_CallbackData cb = entry(&l.p);
  cb.correlationId = correlation;
  EXPECT_FALSE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb)) << "a shadowed launch runs the original";
  EXPECT_EQ(l.p.f, kApp);
  CUpti_CallbackData ex = entry(&l.p, CUPTI_API_EXIT);
  ex.correlationId = correlation;
  s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &ex);
}

TEST(Shadow, ComparesEveryKthLaunchWithinTheTypeAndNamesTheFirstThatDiffers) {
  FakeDriver d;
  FakeShadow sh;
  sh.original_y = std::vector<float>(16, 1.0f);
  sh.variant_y = sh.original_y;
  sh.variant_y[3] = 1.0f + 1e-7f;  // within fp32's default tolerance
  Swapper s({shadow_spec(2)}, d, &sh);
  ShadowLaunch l;
  launch(s, l, 1);  // launch 0: checked, passes
  ASSERT_EQ(sh.seen.size(), 2u) << "y's and x's allocations";
  EXPECT_EQ(sh.seen[0].base, FakeShadow::kY);
  EXPECT_EQ(sh.seen[0].dtype, compare::DType::F32);
  launch(s, l, 2);  // launch 1: not checked (every 2nd)
  sh.variant_y[5] = 7.0f;  // a wrong element
  l.p.gridDimX = 5;
  launch(s, l, 3);  // launch 2: checked, fails
  const auto r = s.report(1).kernels.at(0);
  EXPECT_EQ(r.launches, 3u);
  EXPECT_EQ(r.shadow_checked, 2u);
  EXPECT_EQ(r.shadow_failed, 1u);
  EXPECT_EQ(sh.runs, 2);
  EXPECT_EQ(sh.releases, 2);
  ASSERT_TRUE(r.first_failure.is_object());
  EXPECT_EQ(r.first_failure["launch"], 2);
  EXPECT_EQ(r.first_failure["grid"][0], 5);
  EXPECT_EQ(r.first_failure["param"], 0);
  EXPECT_NE(r.first_failure["summary"].get<std::string>().find("1 of 16 fp32"), std::string::npos)
      << r.first_failure.dump();
}

TEST(Shadow, OnlyWhatTheDeviceFoundDifferentIsReadButTheWholeRegionIsCounted) {
  FakeDriver d;
  FakeShadow sh;
  sh.device_compared = true;
  sh.original_y = std::vector<float>(16, 1.0f);
  sh.variant_y = sh.original_y;
  sh.variant_y[5] = 7.0f;
  Swapper s({shadow_spec(1)}, d, &sh);
  ShadowLaunch l;
  launch(s, l, 1);
  const auto r = s.report(1).kernels.at(0);
  ASSERT_EQ(r.shadow_failed, 1u);
  EXPECT_NE(r.first_failure["summary"].get<std::string>().find("1 of 16 fp32"), std::string::npos)
      << r.first_failure.dump();
}

TEST(Shadow, LeavesGraphNodesToTheOriginal) {
  FakeDriver d;
  FakeShadow sh;
  Swapper s({shadow_spec(1)}, d, &sh);
  CUDA_KERNEL_NODE_PARAMS node{};
  node.func = kApp;
  cuGraphAddKernelNode_v2_params p{};
  p.nodeParams = &node;
  auto cb = entry(&p);
  EXPECT_FALSE(s.on_callback(CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode_v2, &cb));
  EXPECT_EQ(p.nodeParams, &node);
  EXPECT_EQ(s.report(1).kernels.at(0).graph_nodes, 0u);
}

TEST(Shadow, SkipsWhatItCannotCheckAndSaysWhy) {
  FakeDriver d;
  FakeShadow sh;
  auto sp = shadow_spec(1);
  sp.shadow_max_bytes = 100;  // the launch reaches 128 bytes
  Swapper s({sp}, d, &sh);
  ShadowLaunch l;
  launch(s, l, 1);
  const auto r = s.report(1).kernels.at(0);
  EXPECT_EQ(r.shadow_checked, 0u);
  EXPECT_EQ(r.shadow_skipped, 1u);
  EXPECT_NE(r.shadow_skip_reason.find("128 bytes"), std::string::npos) << r.shadow_skip_reason;
  EXPECT_EQ(sh.runs, 0);
}

}  // namespace
}  // namespace kerncap::capture
