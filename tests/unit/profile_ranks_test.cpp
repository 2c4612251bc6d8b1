// `kerncap profile` of a multi-process job: kernel time per rank and device, the rank in
// the record header, and the rank/device columns of the table and the JSON.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "format/profile_records.hpp"
#include "profile/aggregate.hpp"
#include "profile/report_json.hpp"
#include "profile/table.hpp"

using namespace kerncap::profile;
namespace fs = std::filesystem;

namespace {

ProcessRecords rank_process(int64_t pid, int64_t rank, uint32_t device, uint64_t ns, int launches) {
  ProcessRecords p;
  p.info.pid = pid;
  p.info.rank = rank;
  p.info.rank_source = rank >= 0 ? "RANK" : "";
  p.complete = true;
  p.names = {"_Z4gemmv"};
  for (int i = 0; i < launches; ++i) {
    KernelRecord k;
    k.start_ns = 1000 * i;
    k.end_ns = k.start_ns + ns;
    k.device = device;
    p.kernels.push_back(k);
  }
  return p;
}

}  // namespace

TEST(ProfileRanks, KernelTimeIsSplitByRankAndDevice) {
  const Summary s = aggregate({rank_process(10, 0, 0, 100, 2), rank_process(11, 1, 1, 300, 1)});
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].rank, 0);
  EXPECT_EQ(s.ranks[0].device, 0u);
  EXPECT_EQ(s.ranks[0].launches, 2u);
  EXPECT_EQ(s.ranks[0].kernel_ns, 200u);
  EXPECT_EQ(s.ranks[1].rank, 1);
  EXPECT_EQ(s.ranks[1].device, 1u);
  ASSERT_EQ(s.kernels.size(), 1u);
  ASSERT_EQ(s.kernels[0].processes.size(), 2u);
  EXPECT_EQ(s.kernels[0].processes[1].rank, 1);
  EXPECT_EQ(s.kernels[0].processes[1].devices, std::vector<uint32_t>{1});

  const std::string table = format_ranks(s);
  EXPECT_NE(table.find("Rank Device"), std::string::npos) << table;
  EXPECT_NE(table.find("     1      1          1        0.000  60.00  11"), std::string::npos) << table;
  EXPECT_NE(format_processes(s).find("rank 1"), std::string::npos);

  const auto doc = report_json(s, {});
  ASSERT_EQ(doc["by_rank_device"].size(), 2u);
  EXPECT_EQ(doc["by_rank_device"][1]["rank"], 1);
  EXPECT_EQ(doc["by_rank_device"][1]["device"], 1);
  EXPECT_EQ(doc["processes"][1]["rank"], 1);
  EXPECT_EQ(doc["kernels"][0]["extract"]["processes"][1]["devices"], nlohmann::json::array({1}));
}

TEST(ProfileRanks, OneProcessOnOneDeviceHasNoRankTable) {
  const Summary s = aggregate({rank_process(10, -1, 0, 100, 3)});
  EXPECT_EQ(format_ranks(s), "");
  const auto doc = report_json(s, {});
  EXPECT_TRUE(doc["processes"][0]["rank"].is_null());
}

TEST(ProfileRanks, TheRankTravelsInTheRecordHeader) {
  const fs::path dir = fs::temp_directory_path() / ("kerncap_prof_rank_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  kerncap::format::RecordWriter w;
  kerncap::format::ProcessInfo info;
  info.pid = ::getpid();
  info.rank = 3;
  info.rank_source = "SLURM_PROCID";
  ASSERT_TRUE(w.open(dir, info));
  w.finish("exit");
  const auto back = read_records(dir);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].info.rank, 3);
  EXPECT_EQ(back[0].info.rank_source, "SLURM_PROCID");
  fs::remove_all(dir);
}
