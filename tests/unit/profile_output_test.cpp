// The three outputs of `kerncap profile` from the fixture run: the terminal table,
// profile.json and the Chrome trace (parsed back as JSON).
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "profile/aggregate.hpp"
#include "profile/report_json.hpp"
#include "profile/table.hpp"
#include "profile/trace.hpp"

using namespace kerncap::profile;
using nlohmann::json;

namespace {

const std::string kFixture = std::string(KERNCAP_FIXTURES) + "/profile/run1";

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

class ProfileOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    records = read_records(kFixture);
    s = aggregate(records);
  }
  std::vector<ProcessRecords> records;
  Summary s;
};

}  // namespace

TEST_F(ProfileOutput, TableRanksAndLimits) {
  TableOptions opt;
  opt.width = 120;
  std::string t = format_table(s, opt);
  auto l = lines(t);
  ASSERT_GE(l.size(), 6u);
  EXPECT_NE(l[0].find("Kernel"), std::string::npos);
  EXPECT_NE(l[0].find("%GPU"), std::string::npos);
  EXPECT_NE(l[1].find("sm90_xmma_gemm_bf16"), std::string::npos);
  EXPECT_NE(l[1].find("cublas"), std::string::npos);
  EXPECT_NE(l[1].find("gemm"), std::string::npos);
  EXPECT_NE(l[1].find("48.08"), std::string::npos);  // 100 of 208 us
  EXPECT_NE(l[2].find("square"), std::string::npos);
  EXPECT_NE(l[2].find("user"), std::string::npos);
  EXPECT_NE(l[3].find("vectorized_elementwise_kernel"), std::string::npos);
  EXPECT_NE(l[3].find("aten"), std::string::npos);
  EXPECT_NE(t.find("Total: 12 launches"), std::string::npos);
  EXPECT_NE(t.find("1 memcpy"), std::string::npos);
  for (const auto& line : l) EXPECT_LE(line.size(), 160u) << line;  // long names were shortened

  opt.top = 2;
  t = format_table(s, opt);
  EXPECT_EQ(t.find("vectorized_elementwise_kernel"), std::string::npos);
  EXPECT_NE(t.find("Shown: 2 of 5 kernels"), std::string::npos);
  EXPECT_NE(t.find("the rest: 8.65%"), std::string::npos);
}

TEST_F(ProfileOutput, TableFilterKeepsGlobalRanks) {
  TableOptions opt;
  opt.filter = "triton_poi";
  auto l = lines(format_table(s, opt));
  ASSERT_GE(l.size(), 3u);
  EXPECT_EQ(l[1].substr(0, 3), "  4");
  EXPECT_EQ(l[2].substr(0, 3), "  5");
  EXPECT_EQ(l[3], "");

  opt.filter = "square\\(float";  // matches the demangled name
  EXPECT_NE(format_table(s, opt).find("square"), std::string::npos);
  opt.filter = "nothing-matches";
  EXPECT_NE(format_table(s, opt).find("no kernel name matches"), std::string::npos);
  opt.filter = "([unclosed";
  try {
    format_table(s, opt);
    FAIL() << "a bad regex must be a usage error";
  } catch (const kerncap::Error& e) {
    EXPECT_EQ(e.kind(), kerncap::ErrorKind::Usage);
  }
}

TEST_F(ProfileOutput, ProcessLinesSayWhatWentWrong) {
  std::string p = format_processes(s);
  EXPECT_NE(p.find("pid 1000"), std::string::npos);
  EXPECT_NE(p.find("GPU 0 (NVIDIA H100 80GB HBM3)"), std::string::npos);
  EXPECT_NE(p.find("incomplete"), std::string::npos);  // pid 1001
  EXPECT_NE(p.find("another CUPTI client"), std::string::npos);  // pid 1002
}

TEST_F(ProfileOutput, ReportJson) {
  RunInfo run;
  run.ran = true;
  run.command = {"python3", "train.py"};
  run.code = 3;
  run.description = "exited with code 3";
  // Through text, as a consumer reads it.
  json doc = json::parse(report_json(s, run).dump());
  EXPECT_EQ(doc["format"], "kerncap-profile");
  EXPECT_EQ(doc["version"], kReportVersion);
  EXPECT_EQ(doc["application"]["code"], 3);
  EXPECT_EQ(doc["totals"]["launches"], 12);
  EXPECT_EQ(doc["processes"].size(), 3u);
  EXPECT_EQ(doc["processes"][0]["devices"][0]["cc"], "9.0");
  EXPECT_EQ(doc["processes"][2]["errors"][0]["code"], "multiple_subscribers");
  ASSERT_EQ(doc["kernels"].size(), 5u);
  double pct = 0;
  for (const auto& k : doc["kernels"]) pct += k["percent"].get<double>();
  EXPECT_NEAR(pct, 100.0, 1e-6);
  const json& sq = doc["kernels"][1];
  EXPECT_EQ(sq["rank"], 2);
  EXPECT_EQ(sq["name"], "_Z6squarePfi");
  EXPECT_EQ(sq["demangled"], "square(float*, int)");
  EXPECT_EQ(sq["kind"], "user");
  EXPECT_EQ(sq["category"], "other");
  EXPECT_EQ(sq["source_expected"], true);
  EXPECT_EQ(sq["calls"], 6);
  EXPECT_EQ(sq["extract"]["pattern"], "_Z6squarePfi");
  EXPECT_EQ(sq["extract"]["processes"][0]["pid"], 1000);
  EXPECT_EQ(sq["extract"]["processes"][0]["dispatch"], json::array({0, 1, 2, 3}));
  EXPECT_EQ(sq["in_graph"], true);
  EXPECT_EQ(doc["kernels"][0]["in_graph"], false);
  EXPECT_EQ(sq["extract"]["processes"][0]["graph_calls"], 1);

  json no_run = report_json(s, RunInfo{});
  EXPECT_TRUE(no_run["application"].is_null());
}

TEST_F(ProfileOutput, TraceIsValidJsonWithOneEventPerLaunch) {
  std::ostringstream out;
  write_trace(records, out);
  json t = json::parse(out.str());  // throws on invalid JSON
  ASSERT_TRUE(t["traceEvents"].is_array());
  size_t kernels = 0, memcpys = 0;
  std::map<std::string, int> process_names;
  double min_ts = 1e30;
  for (const auto& e : t["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    ASSERT_TRUE(e.contains("pid"));
    if (e["ph"] == "M" && e["name"] == "process_name") process_names[e["args"]["name"]]++;
    if (e["ph"] != "X") continue;
    min_ts = std::min(min_ts, e["ts"].get<double>());
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    if (e["cat"] == "kernel") {
      ++kernels;
      EXPECT_TRUE(e["args"].contains("name"));
      EXPECT_TRUE(e["tid"].is_number());
    }
    if (e["cat"] == "memcpy") ++memcpys;
  }
  EXPECT_EQ(kernels, s.launches);
  EXPECT_EQ(memcpys, 1u);
  EXPECT_EQ(process_names.size(), 3u);
  EXPECT_DOUBLE_EQ(min_ts, 0.0);  // times start at the first activity (the memcpy)

  // The cuBLAS launch: 100 us long, on stream 13, 85 us after the memcpy started.
  bool found = false;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "X" && e["args"].value("registers", 0) == 168) {
      found = true;
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 100.0);
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 85.0);
      EXPECT_EQ(e["tid"], 13);
      EXPECT_EQ(e["pid"], 1000);
      EXPECT_EQ(e["args"]["dispatch"], 0);
    }
  EXPECT_TRUE(found);
}

TEST_F(ProfileOutput, TraceFileErrorsAreUsageErrors) {
  EXPECT_THROW(write_trace_file(records, "/nonexistent/dir/trace.json"), kerncap::Error);
}

TEST(ProfileOutputBenchmarks, BenchmarkCallsAreShownApart) {
  ProcessRecords p;
  p.info.pid = 7;
  p.names = {"triton_poi_fused_0"};
  for (uint32_t corr = 1; corr <= 4; ++corr) {
    KernelRecord k;
    k.start_ns = corr * 100;
    k.end_ns = corr * 100 + 10;
    k.correlation = corr;
    k.benchmark = corr < 4;  // three autotuner benchmark launches, then the program's
    p.kernels.push_back(k);
  }
  Summary s = aggregate({p});
  TableOptions opt;
  opt.width = 120;
  const std::string t = format_table(s, opt);
  EXPECT_NE(t.find("[bench 3]"), std::string::npos) << t;
  EXPECT_NE(t.find("does not count them"), std::string::npos) << t;
  json doc = json::parse(report_json(s, RunInfo{}).dump());
  EXPECT_EQ(doc["kernels"][0]["benchmark_calls"], 3);
  EXPECT_EQ(doc["kernels"][0]["extract"]["processes"][0]["benchmark_calls"], 3);
  EXPECT_EQ(doc["kernels"][0]["extract"]["processes"][0]["dispatch"], json::array({0}));
}
