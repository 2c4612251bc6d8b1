// Aggregation of the hand-written fixture tests/fixtures/profile/run1 (see its README).
// Durations in process 1000: square 20+10+30 us and 10 us inside a CUDA graph, the ATen
// add 5+5 us, the cuBLAS GEMM 100 us, triton ..._add_1 2+2 us, ..._add_10 4 us.
// Process 1001 (killed mid-write): square 10+10 us. Process 1002: an error, no kernels.
#include <gtest/gtest.h>

#include <numeric>

#include "profile/aggregate.hpp"
#include "names/classify.hpp"

using namespace kerncap::profile;
using kerncap::names::Category;
using kerncap::names::Kind;

namespace {

const std::string kFixture = std::string(KERNCAP_FIXTURES) + "/profile/run1";
const char* kCublas =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";

const KernelStats& find(const Summary& s, const std::string& mangled) {
  for (const auto& k : s.kernels)
    if (k.mangled == mangled) return k;
  throw std::runtime_error("kernel not in summary: " + mangled);
}

const KernelInProcess& in_process(const KernelStats& k, int64_t pid) {
  for (const auto& p : k.processes)
    if (p.pid == pid) return p;
  throw std::runtime_error("kernel not in process");
}

class ProfileAggregate : public ::testing::Test {
 protected:
  void SetUp() override {
    records = read_records(kFixture);
    s = aggregate(records);
  }
  std::vector<ProcessRecords> records;
  Summary s;
};

}  // namespace

TEST_F(ProfileAggregate, ReadsEveryProcessAndSkipsOtherFiles) {
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].info.pid, 1000);
  EXPECT_EQ(records[1].info.pid, 1001);
  EXPECT_EQ(records[2].info.pid, 1002);
  EXPECT_TRUE(records[0].complete);
  EXPECT_FALSE(records[1].complete);  // cut off, but its two whole records are kept
  EXPECT_EQ(records[1].kernels.size(), 2u);
  ASSERT_EQ(records[2].errors.size(), 1u);
  EXPECT_EQ(records[2].errors[0].code, "multiple_subscribers");
}

TEST_F(ProfileAggregate, TotalsRanksAndStatistics) {
  EXPECT_EQ(s.launches, 12u);
  EXPECT_EQ(s.total_kernel_ns, 208'000u);
  ASSERT_EQ(s.kernels.size(), 5u);
  EXPECT_EQ(s.kernels[0].mangled, kCublas);
  EXPECT_EQ(s.kernels[1].mangled, "_Z6squarePfi");
  EXPECT_EQ(s.kernels[3].mangled, "triton_poi_fused_add_1");  // tie on 4 us broken by name
  EXPECT_EQ(s.kernels[4].mangled, "triton_poi_fused_add_10");

  const KernelStats& sq = find(s, "_Z6squarePfi");
  EXPECT_EQ(sq.calls, 6u);
  EXPECT_EQ(sq.total_ns, 90'000u);
  EXPECT_DOUBLE_EQ(sq.avg_ns, 15'000.0);
  EXPECT_DOUBLE_EQ(sq.median_ns, 10'000.0);  // 10,10,10,10,20,30
  EXPECT_EQ(sq.min_ns, 10'000u);
  EXPECT_EQ(sq.max_ns, 30'000u);
  EXPECT_NEAR(sq.percent, 100.0 * 90 / 208, 1e-9);
  EXPECT_EQ(sq.demangled, "square(float*, int)");
  EXPECT_EQ(sq.cls.kind, Kind::User);
  EXPECT_EQ(sq.grid, (std::array<int32_t, 3>{4, 1, 1}));  // 5 of its 6 launches
  EXPECT_EQ(sq.shapes, 2u);

  const KernelStats& gemm = find(s, kCublas);
  EXPECT_EQ(gemm.cls.kind, Kind::Cublas);
  EXPECT_EQ(gemm.cls.category, Category::Gemm);
  EXPECT_FALSE(gemm.cls.source_expected);
  EXPECT_EQ(gemm.dynamic_shared, 200000);
  EXPECT_EQ(gemm.registers, 168u);

  EXPECT_EQ(find(s, "triton_poi_fused_add_1").cls.kind, Kind::Triton);
  EXPECT_EQ(s.kernels[2].cls.kind, Kind::Aten);

  double pct = 0;
  for (const auto& k : s.kernels) pct += k.percent;
  EXPECT_NEAR(pct, 100.0, 1e-9);
}

TEST_F(ProfileAggregate, DispatchIndicesFollowLaunchOrderAndTheExtractMatcher) {
  const KernelStats& sq = find(s, "_Z6squarePfi");
  ASSERT_EQ(sq.processes.size(), 2u);
  // Process 1000: launches with correlation 1, 3, 5 (file order was 3, 1, 5), then the
  // graph launch (correlation 10): its kernel node counts as a launch too.
  EXPECT_EQ(in_process(sq, 1000).dispatch, (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(in_process(sq, 1000).calls, 4u);
  EXPECT_EQ(in_process(sq, 1000).graph_calls, 1u);
  EXPECT_EQ(in_process(sq, 1001).dispatch, (std::vector<uint64_t>{0, 1}));
  // "triton_poi_fused_add_1" is also a substring of "..._add_10": launches go 1, 10, 1,
  // so the second launch of _add_1 is the third match of its name.
  EXPECT_EQ(in_process(find(s, "triton_poi_fused_add_1"), 1000).dispatch, (std::vector<uint64_t>{0, 2}));
  EXPECT_EQ(in_process(find(s, "triton_poi_fused_add_10"), 1000).dispatch, (std::vector<uint64_t>{0}));
}

TEST_F(ProfileAggregate, PerProcessSummaries) {
  ASSERT_EQ(s.processes.size(), 3u);
  const ProcessSummary& p = s.processes[0];
  EXPECT_EQ(p.kernels, 10u);
  EXPECT_EQ(p.kernel_ns, 188'000u);
  EXPECT_EQ(p.memcpys, 1u);
  EXPECT_EQ(p.memcpy_bytes, 4096u);
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.processes[1].devices.at(0).id, 1u);
  EXPECT_FALSE(s.processes[1].complete);
  EXPECT_EQ(s.processes[2].kernels, 0u);
  EXPECT_EQ(s.processes[2].errors.size(), 1u);
}

TEST(ProfileAggregateEmpty, NoRecordsGivesAnEmptySummary) {
  Summary s = aggregate({});
  EXPECT_EQ(s.launches, 0u);
  EXPECT_TRUE(s.kernels.empty());
}

TEST(ProfileAggregateGraphs, KernelsOfOneGraphLaunchCountInNodeOrder) {
  // One direct launch (correlation 1), then a graph launch (correlation 2) whose two
  // parallel branches started in the other order: extract counts nodes by node id.
  ProcessRecords p;
  p.names = {"_Z1kv"};
  auto rec = [](uint32_t corr, uint64_t start, uint32_t graph, uint64_t node) {
    KernelRecord k;
    k.start_ns = start;
    k.end_ns = start + 10;
    k.correlation = corr;
    k.graph_id = graph;
    k.graph_node = node;
    return k;
  };
  p.kernels = {rec(2, 500, 7, 12), rec(1, 100, 0, 0), rec(2, 400, 7, 15), rec(2, 450, 7, 11)};
  const std::vector<int64_t> d = dispatch_indices(p, {"k()"});
  EXPECT_EQ(d, (std::vector<int64_t>{2, 0, 3, 1}));
}

TEST(ProfileAggregateBenchmarks, BenchmarkLaunchesAreShownApartAndHaveNoDispatchIndex) {
  // An autotuner benchmarks the kernel (correlations 2..4, inside the shim's window), then
  // the program launches it (5, 6): extract's --dispatch 0 is correlation 5.
  ProcessRecords p;
  p.info.pid = 7;
  p.names = {"triton_poi_fused_0"};
  auto rec = [](uint32_t corr, bool bench) {
    KernelRecord k;
    k.start_ns = corr * 100;
    k.end_ns = corr * 100 + 10;
    k.correlation = corr;
    k.benchmark = bench;
    return k;
  };
  p.kernels = {rec(2, true), rec(3, true), rec(4, true), rec(5, false), rec(6, false)};
  EXPECT_EQ(dispatch_indices(p, {"triton_poi_fused_0"}), (std::vector<int64_t>{-1, -1, -1, 0, 1}));
  Summary s = aggregate({p});
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(s.kernels[0].calls, 5u);
  EXPECT_EQ(s.kernels[0].benchmark_calls, 3u);
  ASSERT_EQ(s.kernels[0].processes.size(), 1u);
  EXPECT_EQ(s.kernels[0].processes[0].benchmark_calls, 3u);
  EXPECT_EQ(s.kernels[0].processes[0].dispatch, (std::vector<uint64_t>{0, 1}));
}
