#include "ingest/json_lines.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::ingest {
namespace {

using ::testing::HasSubstr;

constexpr double kNow = 1767225600.0;

TEST(JsonLinesTest, GroupsLinesByRunIntoColumns) {
  ParsedLines p = ParseJsonLines(
      "{\"project\":\"p\",\"run\":\"a\",\"step\":0,\"time\":10.5,\"metrics\":{\"loss\":1,\"acc\":0."
      "5}}\n"
      "{\"run\":\"b\",\"step\":3,\"metrics\":{\"loss\":NaN}}\n"
      "\n"
      "{\"project\":\"p\",\"run\":\"a\",\"step\":1,\"time\":11,\"metrics\":{\"loss\":-Infinity}}\n",
      kNow, IngestLimits{});
  EXPECT_TRUE(p.errors.empty());
  EXPECT_EQ(p.lines_accepted, 3u);
  EXPECT_EQ(p.points, 4u);
  ASSERT_EQ(p.request.runs_size(), 2);
  const v1::RunBatch& a = p.request.runs(0);
  EXPECT_EQ(a.project(), "p");
  EXPECT_THAT(a.steps(), ::testing::ElementsAre(0, 1));
  EXPECT_THAT(a.times(), ::testing::ElementsAre(10.5, 11));
  ASSERT_EQ(a.metrics_size(), 2);
  EXPECT_EQ(a.metrics(0).name(), "loss");
  EXPECT_EQ(a.metrics(0).rows_size(), 0) << "a column with a value in every row is dense";
  EXPECT_TRUE(std::isinf(a.metrics(0).values(1)));
  EXPECT_EQ(a.metrics(1).name(), "acc");
  EXPECT_THAT(a.metrics(1).rows(), ::testing::ElementsAre(0u));
  const v1::RunBatch& b = p.request.runs(1);
  EXPECT_EQ(b.project(), "default");
  EXPECT_EQ(b.times(0), kNow);
  EXPECT_TRUE(std::isnan(b.metrics(0).values(0)));
}

TEST(JsonLinesTest, ReportsEachBadLineWithItsNumberAndKeepsTheRest) {
  ParsedLines p = ParseJsonLines(
      "{\"run\":\"r\",\"step\":0,\"metrics\":{\"loss\":1}}\n"    // 1 ok
      "{\"run\":\"r\",\"step\":\"1\",\"metrics\":{}}\n"          // 2 step as string
      "{\"run\":\"r\",\"step\":-1}\n"                            // 3 negative
      "{\"run\":\"r\",\"step\":1.5}\n"                           // 4 fraction
      "{\"run\":\"r\",\"step\":NaN}\n"                           // 5 NaN step
      "{\"step\":2,\"metrics\":{\"x\":1}}\n"                     // 6 missing run
      "{\"run\":\"r\",\"metrics\":{\"x\":1}}\n"                  // 7 missing step
      "{\"run\":\"r\",\"step\":2,\"metrics\":{\"x\":null}}\n"    // 8 null value
      "{\"run\":\"r\",\"step\":2,\"metrics\":[1]}\n"             // 9 metrics as list
      "{\"run\":\"r\",\"step\":2,\"bogus\":1}\n"                 // 10 unknown field
      "{\"run\":\"r\",\"step\":2\n"                              // 11 truncated
      "{\"run\":\"\",\"step\":2}\n"                              // 12 empty run
      "{\"run\":\"r\",\"step\":2,\"metrics\":{\"loss\":2}} x\n"  // 13 trailing text
      "{\"run\":\"r\",\"step\":99999999999999999999}\n"          // 14 huge step
      "{\"run\":\"r\",\"step\":1,\"metrics\":{\"loss\":2}}\n",   // 15 ok
      kNow, IngestLimits{});
  EXPECT_EQ(p.lines_accepted, 2u);
  std::vector<uint64_t> lines;
  for (const LineError& e : p.errors) lines.push_back(e.line);
  EXPECT_THAT(lines, ::testing::ElementsAre(2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14));
  EXPECT_THAT(p.errors[0].message, HasSubstr("step"));
  EXPECT_THAT(p.errors[1].message, HasSubstr("negative"));
  EXPECT_THAT(p.errors[4].message, HasSubstr("'run'"));
  EXPECT_THAT(p.errors[6].message, HasSubstr("metric 'x'"));
  EXPECT_THAT(p.errors[8].message, HasSubstr("unknown field 'bogus'"));
  ASSERT_EQ(p.request.runs_size(), 1);
  EXPECT_THAT(p.request.runs(0).steps(), ::testing::ElementsAre(0, 1));
}

TEST(JsonLinesTest, EnforcesNameAndMetricLimits) {
  IngestLimits limits;
  limits.max_name_bytes = 8;
  limits.max_metrics_per_run = 2;
  ParsedLines p = ParseJsonLines(
      "{\"run\":\"much-too-long\",\"step\":0}\n"
      "{\"run\":\"r\",\"step\":0,\"metrics\":{\"a\":1,\"b\":2,\"c\":3}}\n"
      "{\"run\":\"r\\u0001\",\"step\":0}\n",
      kNow, limits);
  ASSERT_EQ(p.errors.size(), 3u);
  EXPECT_THAT(p.errors[0].message, HasSubstr("limit is 8"));
  EXPECT_THAT(p.errors[1].message, HasSubstr("more than 2 metrics"));
  EXPECT_THAT(p.errors[2].message, HasSubstr("control character"));
}

TEST(JsonLinesTest, CarriesRunMetadata) {
  ParsedLines p = ParseJsonLines(
      "{\"run\":\"r\",\"name\":\"nice\",\"tags\":[\"a\",\"b\"],\"config\":{\"opt\":{\"lr\":0.1}}}\n"
      "{\"run\":\"r\",\"config\":{\"opt\":{\"wd\":0.01}},\"status\":\"finished\"}\n"
      "{\"run\":\"r\",\"status\":\"exploded\"}\n",
      kNow, IngestLimits{});
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].line, 3u);
  const v1::RunMetadata& m = p.request.runs(0).metadata();
  EXPECT_EQ(m.name(), "nice");
  EXPECT_THAT(m.tags(), ::testing::ElementsAre("a", "b"));
  EXPECT_EQ(m.config_json(), R"({"opt":{"lr":0.1,"wd":0.01}})");
  EXPECT_EQ(m.status(), "finished");
}

TEST(JsonLinesTest, GroupsRankLinesIntoOneBatchPerRank) {
  ParsedLines p = ParseJsonLines(
      "{\"run\":\"r\",\"rank\":1,\"world_size\":4,\"local_rank\":1,\"host\":\"n1\",\"step\":0,"
      "\"metrics\":{\"loss\":1}}\n"
      "{\"run\":\"r\",\"rank\":0,\"world_size\":4,\"host\":\"n0\",\"step\":0,\"metrics\":{\"loss\":"
      "2}}\n"
      "{\"run\":\"r\",\"rank\":1,\"step\":1,\"metrics\":{\"loss\":3}}\n"
      "{\"run\":\"r\",\"host\":\"h\",\"step\":2,\"metrics\":{\"loss\":4}}\n",
      kNow, IngestLimits{});
  EXPECT_TRUE(p.errors.empty());
  ASSERT_EQ(p.request.runs_size(), 3);
  const v1::RunBatch& r1 = p.request.runs(0);
  ASSERT_TRUE(r1.has_rank());
  EXPECT_EQ(r1.rank().rank(), 1u);
  EXPECT_EQ(r1.rank().world_size(), 4u);
  EXPECT_EQ(r1.rank().local_rank(), 1u);
  EXPECT_EQ(r1.rank().host(), "n1");
  EXPECT_THAT(r1.steps(), ::testing::ElementsAre(0, 1));
  EXPECT_FALSE(r1.metadata().has_host()) << "a rank's host is the rank's, not the run's";
  const v1::RunBatch& r0 = p.request.runs(1);
  ASSERT_TRUE(r0.has_rank());
  EXPECT_EQ(r0.rank().rank(), 0u);
  EXPECT_EQ(r0.rank().host(), "n0");
  const v1::RunBatch& plain = p.request.runs(2);
  EXPECT_FALSE(plain.has_rank());
  EXPECT_EQ(plain.metadata().host(), "h");
}

TEST(JsonLinesTest, RefusesInconsistentRanksNamingTheField) {
  ParsedLines p = ParseJsonLines(
      "{\"run\":\"r\",\"rank\":4,\"world_size\":4,\"step\":0}\n"        // 1 rank >= world_size
      "{\"run\":\"r\",\"rank\":-1,\"step\":0}\n"                        // 2 negative
      "{\"run\":\"r\",\"rank\":1.5,\"step\":0}\n"                       // 3 fraction
      "{\"run\":\"r\",\"world_size\":4,\"step\":0}\n"                   // 4 world_size alone
      "{\"run\":\"r\",\"rank\":0,\"world_size\":0}\n"                   // 5 world_size 0
      "{\"run\":\"r\",\"rank\":\"0\"}\n"                                // 6 string
      "{\"run\":\"r\",\"rank\":0,\"local_rank\":8,\"world_size\":8}\n"  // 7 local rank too big
      "{\"run\":\"r\",\"local_rank\":0}\n"                              // 8 local_rank alone
      "{\"run\":\"r\",\"rank\":3000000000}\n",                          // 9 out of range
      kNow, IngestLimits{});
  ASSERT_EQ(p.errors.size(), 9u);
  EXPECT_EQ(p.lines_accepted, 0u);
  EXPECT_THAT(p.errors[0].message, HasSubstr("field 'rank': must be below world_size (4)"));
  EXPECT_THAT(p.errors[1].message, HasSubstr("field 'rank': must not be negative"));
  EXPECT_THAT(p.errors[2].message, HasSubstr("field 'rank': expected an integer"));
  EXPECT_THAT(p.errors[3].message, HasSubstr("field 'world_size' needs field 'rank'"));
  EXPECT_THAT(p.errors[4].message, HasSubstr("field 'world_size': must be at least 1"));
  EXPECT_THAT(p.errors[5].message, HasSubstr("field 'rank': expected an integer"));
  EXPECT_THAT(p.errors[6].message, HasSubstr("field 'local_rank'"));
  EXPECT_THAT(p.errors[7].message, HasSubstr("field 'local_rank' needs field 'rank'"));
  EXPECT_THAT(p.errors[8].message, HasSubstr("field 'rank': must be at most"));
}

}  // namespace
}  // namespace trainwatch::ingest
