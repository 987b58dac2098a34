#include "import_logdir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/testing/temp_dir.h"

namespace trainwatch::tools {
namespace {

TEST(RankOfDirNameTest, RankWordsSeparatorsAndNumbers) {
  EXPECT_EQ(RankOfDirName("rank_0"), 0u);
  EXPECT_EQ(RankOfDirName("rank-1"), 1u);
  EXPECT_EQ(RankOfDirName("rank2"), 2u);
  EXPECT_EQ(RankOfDirName("worker_3"), 3u);
  EXPECT_EQ(RankOfDirName("Rank.12"), 12u);
  EXPECT_EQ(RankOfDirName("GPU7"), 7u);
  EXPECT_EQ(RankOfDirName("process_05"), 5u);
  for (const char* name : {"rank", "rank_", "ranks_1", "rank_1a", "lr-0.1", "run_1", "my_rank_1",
                           "rank__1", "rank_1234567890"}) {
    EXPECT_EQ(RankOfDirName(name), std::nullopt) << name;
  }
}

TEST(HostOfEventFileTest, TheFieldsBetweenTimeAndPid) {
  EXPECT_EQ(HostOfEventFile("events.out.tfevents.1767225600.node-a.4000.0"), "node-a");
  EXPECT_EQ(HostOfEventFile("events.out.tfevents.1767225600.gpu1.cluster.local.77"),
            "gpu1.cluster.local");
  EXPECT_EQ(HostOfEventFile("events.out.tfevents.1767225600.host.1"), "host");
  EXPECT_EQ(HostOfEventFile("events.out.tfevents.1767225600.v2"),
            "");  // no pid: not a writer's name
  EXPECT_EQ(HostOfEventFile("my.tfevents.file"), "");
}

class PlanRunsTest : public testing::Test {
 protected:
  void Touch(const std::string& rel) {
    const std::filesystem::path p = std::filesystem::path(dir_.path()) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << "";
  }
  std::vector<ImportRun> Plan(bool all_ranks) {
    auto found = FindRuns(dir_.path());
    EXPECT_TRUE(found.ok());
    auto plan = PlanRuns(dir_.path(), std::move(*found), all_ranks);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    return plan.ok() ? std::move(*plan) : std::vector<ImportRun>{};
  }
  test::TempDir dir_;
};

TEST_F(PlanRunsTest, RankDirectoriesOfOneParentAreOneRun) {
  Touch("exp/rank_1/events.out.tfevents.1.node-a.11.0");
  Touch("exp/rank_0/events.out.tfevents.1.node-a.10.0");
  Touch("exp/worker_3/events.out.tfevents.1.node-b.13.0");
  Touch("exp/events.out.tfevents.1.node-a.9.0");
  Touch("plain/lr-0.1/events.out.tfevents.1.h.1");
  auto plan = Plan(false);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].id, "exp");
  ASSERT_EQ(plan[0].ranks.size(), 3u);
  EXPECT_EQ(plan[0].ranks[0].rank, 0u);
  EXPECT_EQ(plan[0].ranks[0].host, "node-a");
  EXPECT_EQ(plan[0].ranks[2].rank, 3u);
  EXPECT_EQ(plan[0].ranks[2].host, "node-b");
  EXPECT_EQ(plan[0].ranks[2].dir.id, "exp/worker_3");
  EXPECT_EQ(plan[0].world_size, 4u);
  ASSERT_TRUE(plan[0].run_level.has_value());
  EXPECT_EQ(plan[0].run_level->id, "exp");
  EXPECT_EQ(plan[1].id, "plain/lr-0.1");
  EXPECT_TRUE(plan[1].ranks.empty());
}

TEST_F(PlanRunsTest, TheRanksFlagNumbersDirectoriesInNameOrderUnlessTheirNamesSayRanks) {
  Touch("b/events.out.tfevents.1.h.1");
  Touch("a/events.out.tfevents.1.h.1");
  auto plan = Plan(true);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].id, std::filesystem::path(dir_.path()).filename().string());
  ASSERT_EQ(plan[0].ranks.size(), 2u);
  EXPECT_EQ(plan[0].ranks[0].dir.id, "a");
  EXPECT_EQ(plan[0].ranks[1].dir.id, "b");
}

TEST_F(PlanRunsTest, TwoDirectoriesOfOneRankAreRefused) {
  Touch("exp/rank_1/events.out.tfevents.1.h.1");
  Touch("exp/rank-1/events.out.tfevents.1.h.1");
  auto found = FindRuns(dir_.path());
  ASSERT_TRUE(found.ok());
  auto plan = PlanRuns(dir_.path(), std::move(*found), false);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), testing::HasSubstr("both hold rank 1"));
}

}  // namespace
}  // namespace trainwatch::tools
