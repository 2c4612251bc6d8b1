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

TEST(Swapper, LayoutMismatchText) {
  EXPECT_EQ(layout_mismatch({{0, 8}}, {{0, 8}}), "");
  EXPECT_EQ(layout_mismatch({}, {{0, 8}}), "") << "unknown agrees (the launcher checked what it could)";
  EXPECT_NE(layout_mismatch({{0, 8}}, {{0, 8}, {8, 4}}).find("takes 1 parameters, the variant 2"), std::string::npos);
}

}  // namespace
}  // namespace kerncap::capture
