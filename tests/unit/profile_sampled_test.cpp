// Aggregation of a sampled process (`profile --sample`), from fake records: calls and
// extract's indices come from the counted runs, exact; totals are calls x the timed mean and
// marked as estimates; graph kernels count from their records; benchmark runs get no index.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "profile/aggregate.hpp"
#include "profile/report_json.hpp"
#include "profile/table.hpp"

using namespace kerncap::profile;
using kerncap::format::LaunchRun;

namespace {

const KernelStats& find(const Summary& s, const std::string& mangled) {
  for (const auto& k : s.kernels)
    if (k.mangled == mangled) return k;
  throw std::runtime_error("kernel not in summary: " + mangled);
}

KernelRecord timed(uint32_t name, uint32_t corr, uint64_t start, uint64_t ns, uint32_t graph = 0, uint64_t node = 0) {
  KernelRecord k;
  k.name_id = name;
  k.correlation = corr;
  k.start_ns = start;
  k.end_ns = start + ns;
  k.grid = {1, 1, 1};
  k.block = {32, 1, 1};
  k.graph_id = graph;
  k.graph_node = node;
  return k;
}

// Names: 0 add_1, 1 add_10 (add_1's pattern also matches it), 2 gemm.
ProcessRecords sampled_process() {
  ProcessRecords p;
  p.info.pid = 42;
  p.complete = true;
  p.sample_period = 10;
  p.names = {"triton_poi_fused_add_1", "triton_poi_fused_add_10", "gemm"};
  // Launch order: 1000 x add_1, 2 x add_10, a graph launch (corr 1100) of gemm + add_1,
  // 3 x add_1 inside a benchmark window, 500 x gemm.
  p.runs = {LaunchRun{0, 1000, 1, 1000, false}, LaunchRun{1, 2, 1001, 1002, false},
            LaunchRun{0, 3, 1101, 1103, true}, LaunchRun{2, 500, 1200, 1699, false}};
  // Timed: 10 of the add_1 launches (10 us each), one add_10 (4 us), both graph kernels,
  // 5 of the gemm launches (100 us each).
  uint64_t t = 0;
  for (uint32_t i = 0; i < 10; ++i) p.kernels.push_back(timed(0, 1 + i, t += 20'000, 10'000));
  p.kernels.push_back(timed(1, 1001, t += 20'000, 4'000));
  p.kernels.push_back(timed(2, 1100, t += 20'000, 100'000, 7, 1));
  p.kernels.push_back(timed(0, 1100, t += 200'000, 10'000, 7, 2));
  for (uint32_t i = 0; i < 5; ++i) p.kernels.push_back(timed(2, 1200 + i, t += 200'000, 100'000));
  return p;
}

}  // namespace

TEST(ProfileSampled, CallsAndDispatchIndicesAreExactAndTotalsEstimated) {
  const Summary s = aggregate({sampled_process()});
  const KernelStats& add1 = find(s, "triton_poi_fused_add_1");
  EXPECT_EQ(add1.calls, 1000u + 1 + 3);  // the runs, the graph node, the benchmark run
  EXPECT_EQ(add1.samples, 11u);
  EXPECT_TRUE(add1.estimated);
  EXPECT_EQ(add1.total_ns, 1004u * 10'000);  // calls x the timed mean
  EXPECT_DOUBLE_EQ(add1.avg_ns, 10'000);
  EXPECT_EQ(add1.benchmark_calls, 3u);
  ASSERT_EQ(add1.processes.size(), 1u);
  const KernelInProcess& in42 = add1.processes[0];
  EXPECT_EQ(in42.graph_calls, 1u);
  // add_1's pattern counts add_10's launches too: 0..999 are its run, 1000-1001 add_10's,
  // then the graph: gemm's node first, then add_1's node (1002). The benchmark run has none.
  ASSERT_EQ(in42.dispatch.size(), 1001u);
  EXPECT_EQ(in42.dispatch[0], 0u);
  EXPECT_EQ(in42.dispatch[999], 999u);
  EXPECT_EQ(in42.dispatch[1000], 1002u);

  const KernelStats& add10 = find(s, "triton_poi_fused_add_10");
  EXPECT_EQ(add10.calls, 2u);
  EXPECT_TRUE(add10.estimated);
  EXPECT_EQ(add10.total_ns, 8'000u);
  EXPECT_EQ(add10.processes[0].dispatch, (std::vector<uint64_t>{0, 1}));

  const KernelStats& gemm = find(s, "gemm");
  EXPECT_EQ(gemm.calls, 501u);
  EXPECT_EQ(gemm.samples, 6u);
  EXPECT_EQ(gemm.total_ns, 501u * 100'000);
  ASSERT_EQ(gemm.processes[0].dispatch.size(), 501u);
  EXPECT_EQ(gemm.processes[0].dispatch[0], 0u);  // the graph node came first
  EXPECT_EQ(gemm.processes[0].dispatch[500], 500u);

  EXPECT_TRUE(s.estimated);
  EXPECT_EQ(s.launches, 1004u + 2 + 501);
  EXPECT_EQ(s.total_kernel_ns, add1.total_ns + add10.total_ns + gemm.total_ns);
  EXPECT_EQ(s.kernels[0].mangled, "gemm");  // ranked by the estimated totals
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_EQ(s.processes[0].kernels, s.launches);
  EXPECT_EQ(s.processes[0].timed, 18u);
  EXPECT_EQ(s.processes[0].sample_period, 10u);
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_EQ(s.ranks[0].launches, s.launches);  // the timed launches scaled up, per kernel
}

TEST(ProfileSampled, TimedRecordsOutsideGraphsHaveNoIndexOfTheirOwn) {
  const ProcessRecords p = sampled_process();
  std::vector<std::string> demangled = p.names;
  const std::vector<int64_t> d = dispatch_indices(p, demangled);
  ASSERT_EQ(d.size(), p.kernels.size());
  EXPECT_EQ(d[0], -1);   // which launch of its run this was is not recorded
  EXPECT_EQ(d[11], 0);   // gemm's graph node
  EXPECT_EQ(d[12], 1002);  // add_1's graph node
}

TEST(ProfileSampled, AKernelNeverTimedIsCountedAndMarked) {
  ProcessRecords p = sampled_process();
  p.names.push_back("rare");
  p.runs.push_back(LaunchRun{3, 7, 1700, 1706, false});
  const Summary s = aggregate({p});
  const KernelStats& rare = find(s, "rare");
  EXPECT_EQ(rare.calls, 7u);
  EXPECT_EQ(rare.samples, 0u);
  EXPECT_TRUE(rare.estimated);
  EXPECT_EQ(rare.total_ns, 0u);
  TableOptions opt;
  opt.top = 0;
  opt.width = 120;
  const std::string table = format_table(s, opt);
  EXPECT_NE(table.find("~"), std::string::npos) << table;
  EXPECT_NE(table.find("none of its launches fell in a timed window"), std::string::npos) << table;
  EXPECT_NE(table.find("calls and `extract --dispatch` indices are exact"), std::string::npos) << table;
  const auto doc = report_json(s, RunInfo{});
  EXPECT_EQ(doc["totals"]["estimated"], true);
  EXPECT_EQ(doc["processes"][0]["sample_period"], 10);
  EXPECT_EQ(doc["processes"][0]["timed"], 18);
}

TEST(ProfileSampled, AllLaunchesTimedIsExact) {
  // A process below the sampling threshold: every launch has its record; nothing is estimated.
  ProcessRecords p;
  p.info.pid = 7;
  p.sample_period = 10;
  p.names = {"k"};
  p.runs = {LaunchRun{0, 3, 1, 3, false}};
  p.kernels = {timed(0, 1, 0, 5), timed(0, 2, 10, 6), timed(0, 3, 20, 7)};
  const Summary s = aggregate({p});
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_FALSE(s.kernels[0].estimated);
  EXPECT_FALSE(s.estimated);
  EXPECT_EQ(s.kernels[0].total_ns, 18u);
  EXPECT_EQ(s.kernels[0].processes[0].dispatch, (std::vector<uint64_t>{0, 1, 2}));
}

TEST(ProfileSampled, RunsAndTheSamplingLineRoundTripThroughTheRecordFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kerncap-sampled-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    kerncap::format::RecordWriter w;
    ProcessInfo info;
    info.pid = 99;
    ASSERT_TRUE(w.open(dir, info));
    w.sampling(5, 20000, 1000);
    EXPECT_EQ(w.name_id("a"), 0u);
    EXPECT_EQ(w.name_id("b"), 1u);
    EXPECT_EQ(w.name_id("a"), 0u);
    w.runs({LaunchRun{0, 10, 1, 10, false}, LaunchRun{1, 2, 11, 12, true}});
    w.kernel("a", timed(0, 3, 0, 5));  // the same id space as the runs
    w.finish("exit");
  }
  const auto records = read_records(dir);
  fs::remove_all(dir);
  ASSERT_EQ(records.size(), 1u);
  const ProcessRecords& p = records[0];
  EXPECT_EQ(p.sample_period, 5u);
  EXPECT_EQ(p.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.runs, (std::vector<LaunchRun>{LaunchRun{0, 10, 1, 10, false}, LaunchRun{1, 2, 11, 12, true}}));
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].name_id, 0u);
}

TEST(ProfileSampled, CopiesAreSaidToBeFromTheTimedWindows) {
  // Sampled, memcpy/memset records follow the timed windows: the table and profile.json say
  // their counts are those of the windows; exact, they say nothing of the kind.
  ProcessRecords p = sampled_process();
  kerncap::format::MemRecord copy;
  copy.copy_kind = "HtoD";
  copy.bytes = 4096;
  copy.start_ns = 10;
  copy.end_ns = 1010;
  p.memops.push_back(copy);
  TableOptions opt;
  opt.top = 0;
  opt.width = 120;
  const Summary sampled = aggregate({p});
  EXPECT_NE(format_table(sampled, opt).find("Not in the table (recorded in the timed windows only): 1 memcpy"),
            std::string::npos)
      << format_table(sampled, opt);
  EXPECT_EQ(report_json(sampled, RunInfo{})["processes"][0]["memcpy"]["sampled"], true);
  p.sample_period = 0;
  const Summary exact = aggregate({p});
  EXPECT_NE(format_table(exact, opt).find("Not in the table: 1 memcpy"), std::string::npos) << format_table(exact, opt);
  EXPECT_EQ(report_json(exact, RunInfo{})["processes"][0]["memcpy"]["sampled"], false);
}
