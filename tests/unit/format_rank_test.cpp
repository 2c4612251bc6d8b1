// Which rank a process is (`extract --rank`): the launchers' variables in their documented
// precedence, and the start-order slots when none is set.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>

#include "format/out_layout.hpp"
#include "format/rank.hpp"

using namespace kerncap::format;
namespace fs = std::filesystem;

namespace {

ProcessRank from(const std::map<std::string, std::string>& env) {
  return rank_from_env([&](std::string_view name) -> const char* {
    auto it = env.find(std::string(name));
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST(FormatRank, TorchrunsRankComesBeforeTheOuterLaunchers) {
  auto r = from({{"SLURM_PROCID", "0"}, {"OMPI_COMM_WORLD_RANK", "0"}, {"LOCAL_RANK", "1"}, {"RANK", "5"}});
  ASSERT_TRUE(r.rank);
  EXPECT_EQ(*r.rank, 5u);
  EXPECT_EQ(r.source, "RANK");
}

TEST(FormatRank, EachLauncherAloneNamesTheRank) {
  for (std::string_view name : kRankVars) {
    auto r = from({{std::string(name), "2"}});
    ASSERT_TRUE(r.rank) << name;
    EXPECT_EQ(*r.rank, 2u);
    EXPECT_EQ(r.source, name);
  }
  auto r = from({{"OMPI_COMM_WORLD_RANK", "3"}, {"PMI_RANK", "1"}, {"SLURM_PROCID", "0"}});
  EXPECT_EQ(r.source, "OMPI_COMM_WORLD_RANK");
}

TEST(FormatRank, MalformedOrEmptyValuesAreSkipped) {
  auto r = from({{"RANK", ""}, {"LOCAL_RANK", "one"}, {"PMI_RANK", "-1"}, {"SLURM_PROCID", "4"}});
  ASSERT_TRUE(r.rank);
  EXPECT_EQ(*r.rank, 4u);
  EXPECT_EQ(r.source, "SLURM_PROCID");
  EXPECT_FALSE(from({}).rank);
  EXPECT_EQ(from({}).source, "");
}

TEST(FormatRank, StartSlotsAreTakenInOrderAndNeverTwice) {
  const fs::path out = fs::temp_directory_path() / ("kerncap_rank_" + std::to_string(::getpid()));
  fs::remove_all(out);
  EXPECT_FALSE(take_start_slot(out));  // no OUT/.kerncap: no slot (the process runs untouched)
  fs::create_directories(out::state_dir(out));
  EXPECT_EQ(take_start_slot(out), 0u);
  EXPECT_EQ(take_start_slot(out), 1u);
  fs::remove(out::rank_slot_file(out, 0));  // a slot is never handed out again only while its file exists
  EXPECT_EQ(take_start_slot(out), 0u);
  EXPECT_EQ(take_start_slot(out), 2u);
  EXPECT_FALSE(take_start_slot(out, 3));  // all slots taken
  fs::remove_all(out);
}
