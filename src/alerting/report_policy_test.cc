#include "alerting/report_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace trainwatch::alerting {
namespace {

Result<ReportPolicy> Parse(const std::string& text) {
  return ParseReportPolicy(YAML::Load(text), "alerting.yml");
}

TEST(ReportPolicyTest, NoSectionWantsNothing) {
  auto policy = Parse("receivers: []\n");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_TRUE(policy->empty());
  EXPECT_FALSE(policy->Wants("p", "finished"));
}

TEST(ReportPolicyTest, ProjectsAndStatusesFilter) {
  auto policy = Parse(
      "reports:\n"
      "  - projects: [\"vision-*\"]\n"
      "  - projects: nlp\n"
      "    statuses: [crashed]\n");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_TRUE(policy->Wants("vision-a", "finished"));
  EXPECT_TRUE(policy->Wants("vision-a", "crashed"));
  EXPECT_FALSE(policy->Wants("vision-a", "running"));
  EXPECT_TRUE(policy->Wants("nlp", "crashed"));
  EXPECT_FALSE(policy->Wants("nlp", "finished"));
  EXPECT_FALSE(policy->Wants("audio", "finished"));
  EXPECT_EQ(policy->entries[1].line, 3);
}

TEST(ReportPolicyTest, EntryWithoutProjectsMatchesEveryProject) {
  auto policy = Parse("reports:\n  - statuses: [finished]\n");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_TRUE(policy->Wants("anything", "finished"));
  EXPECT_FALSE(policy->Wants("anything", "crashed"));
}

TEST(ReportPolicyTest, ErrorsNameLineAndField) {
  auto bad_status = Parse("reports:\n  - statuses: [finished, stalled]\n");
  ASSERT_FALSE(bad_status.ok());
  EXPECT_EQ(bad_status.status().message(),
            "alerting.yml:2: reports[0].statuses: unknown status 'stalled' (finished or crashed)");
  auto bad_key = Parse("reports:\n  - project: [a]\n");
  ASSERT_FALSE(bad_key.ok());
  EXPECT_THAT(bad_key.status().message(),
              testing::HasSubstr("alerting.yml:2: reports[0]: unknown key 'project'"));
  auto not_list = Parse("reports: {projects: [a]}\n");
  ASSERT_FALSE(not_list.ok());
  EXPECT_THAT(not_list.status().message(), testing::HasSubstr("reports: expected a list"));
}

}  // namespace
}  // namespace trainwatch::alerting
