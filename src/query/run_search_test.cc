// Run search over a real Engine: every filter, every sort key, paging and latest values.
#include "query/run_search.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "query/local_querier.h"
#include "query/query_test_util.h"

namespace trainwatch::query {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class RunSearchTest : public QueryEngineTest {
 protected:
  void SetUp() override {
    Open();
    // Three runs in "vision", one in "nlp"; start times 30, 10, 20 (id order differs from every
    // sort).
    AddRun("vision", "r1", "resnet-a", 30, {"base", "gpu"}, "sweep",
           R"({"lr":0.001,"opt":{"name":"adam"}})");
    AddRun("vision", "r2", "resnet-b", 10, {"gpu"}, "sweep",
           R"({"lr":0.01,"opt":{"name":"sgd"},"amp":true})");
    AddRun("vision", "r3", "vit", 20, {}, "", R"({"lr":"1e-3"})");
    AddRun("nlp", "r4", "resnet-lm", 40, {"gpu"}, "", "{}");
    Write("vision", "r1", "acc", {{1, 0.5}, {2, 0.7}});
    Write("vision", "r2", "acc", {{1, 0.9}});
    Write("vision", "r1", "loss", {{1, 2.0}, {5, 1.5}});
    WriteMetadata("vision", "r2", [](v1::RunMetadata* m) { m->set_status("finished"); });
  }

  void AddRun(const std::string& project, const std::string& id, const std::string& name,
              double start, const std::vector<std::string>& tags, const std::string& group,
              const std::string& config) {
    WriteMetadata(project, id, [&](v1::RunMetadata* m) {
      m->set_name(name);
      m->set_start_time(start);
      for (const std::string& tag : tags) m->add_tags(tag);
      if (!group.empty()) m->set_group(group);
      m->set_config_json(config);
    });
  }

  // The ids of the page, in order.
  std::vector<std::string> Ids(const RunSearch& search) {
    Result<RunPage> page = SearchRuns(*engine_, search);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    std::vector<std::string> ids;
    if (page.ok()) {
      for (const RunRow& row : page->rows) ids.push_back(row.info.id);
    }
    return ids;
  }
};

TEST_F(RunSearchTest, EveryRunNewestFirstByDefault) {
  EXPECT_THAT(Ids({}), ElementsAre("r4", "r1", "r3", "r2"));
}

TEST_F(RunSearchTest, FiltersCombine) {
  RunSearch s;
  s.project = "vision";
  EXPECT_THAT(Ids(s), ElementsAre("r1", "r3", "r2"));
  s.name_regex = "^resnet";  // unanchored unless anchored: "resnet-lm" is in another project
  EXPECT_THAT(Ids(s), ElementsAre("r1", "r2"));
  s.tags = {"gpu", "base"};  // every tag
  EXPECT_THAT(Ids(s), ElementsAre("r1"));

  RunSearch by_status;
  by_status.status = "finished";
  EXPECT_THAT(Ids(by_status), ElementsAre("r2"));
  RunSearch by_group;
  by_group.group = "sweep";
  EXPECT_THAT(Ids(by_group), ElementsAre("r1", "r2"));
  RunSearch by_name;
  by_name.name_regex = "net-";
  EXPECT_THAT(Ids(by_name), ElementsAre("r4", "r1", "r2"));
}

TEST_F(RunSearchTest, ConfigValuesCompareByTheirType) {
  RunSearch s;
  s.config = {{"lr", "0.001"}};  // the number 0.001, not the string "1e-3"
  EXPECT_THAT(Ids(s), ElementsAre("r1"));
  s.config = {{"lr", "1e-2"}};  // numbers compare as numbers
  EXPECT_THAT(Ids(s), ElementsAre("r2"));
  s.config = {{"lr", "1e-3"}};  // strings as strings: r3's "1e-3", and r1's 0.001 as a number
  EXPECT_THAT(Ids(s), ElementsAre("r1", "r3"));
  s.config = {{"opt.name", "sgd"}};  // dotted paths reach nested objects
  EXPECT_THAT(Ids(s), ElementsAre("r2"));
  s.config = {{"amp", "true"}};  // anything else by its JSON text
  EXPECT_THAT(Ids(s), ElementsAre("r2"));
  s.config = {{"opt.name.x", "adam"}, {"lr", "0.001"}};
  EXPECT_THAT(Ids(s), ElementsAre());
}

TEST_F(RunSearchTest, SortKeys) {
  RunSearch s;
  s.sort = "name";
  EXPECT_THAT(Ids(s), ElementsAre("r1", "r2", "r4", "r3"));
  s.sort = "-name";
  EXPECT_THAT(Ids(s), ElementsAre("r3", "r4", "r2", "r1"));
  s.sort = "start_time";
  EXPECT_THAT(Ids(s), ElementsAre("r2", "r3", "r1", "r4"));
  s.sort = "status";  // finished < running; ties keep the engine's order
  EXPECT_EQ(Ids(s).front(), "r2");
  // By a metric's latest value; runs without it last, whatever the direction (in the engine's
  // order of (project, id) among themselves).
  s.sort = "metric:acc";
  EXPECT_THAT(Ids(s), ElementsAre("r1", "r2", "r4", "r3"));
  s.sort = "-metric:acc";
  EXPECT_THAT(Ids(s), ElementsAre("r2", "r1", "r4", "r3"));
}

TEST_F(RunSearchTest, PagesCountEveryMatchAndCarryTheLatestValuesAsked) {
  RunSearch s;
  s.sort = "start_time";
  s.offset = 1;
  s.limit = 2;
  s.latest = {"loss", "missing", "acc"};
  Result<RunPage> page = SearchRuns(*engine_, s);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 4u);
  ASSERT_EQ(page->rows.size(), 2u);
  EXPECT_EQ(page->rows[0].info.id, "r3");
  EXPECT_TRUE(page->rows[0].latest.empty());
  EXPECT_EQ(page->rows[1].info.id, "r1");
  ASSERT_EQ(page->rows[1].latest.size(), 2u);  // in the order asked, the missing one left out
  EXPECT_EQ(page->rows[1].latest[0].first, "loss");
  EXPECT_EQ(page->rows[1].latest[0].second.step, 5);
  EXPECT_EQ(page->rows[1].latest[0].second.value, 1.5);
  EXPECT_EQ(page->rows[1].latest[1].first, "acc");
  EXPECT_EQ(page->rows[1].latest[1].second.value, 0.7);

  s.offset = 10;  // past the end: an empty page, the total still counted
  page = SearchRuns(*engine_, s);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 4u);
  EXPECT_TRUE(page->rows.empty());
}

TEST_F(RunSearchTest, BadRegexAndSortKeyAreInvalidArguments) {
  RunSearch s;
  s.name_regex = "res(net";
  Result<RunPage> page = SearchRuns(*engine_, s);
  ASSERT_EQ(page.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(page.status().message(), HasSubstr("invalid regular expression 'res(net': "));
  s.name_regex.clear();
  s.sort = "-colour";
  page = SearchRuns(*engine_, s);
  ASSERT_EQ(page.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(page.status().message(),
            "unknown sort key 'colour' (name, start_time, last_write_time, status, metric:<name>)");
}

TEST_F(RunSearchTest, TheLocalQuerierAnswersTheSame) {
  LocalQuerier querier(*engine_);
  RunSearch s;
  s.project = "vision";
  s.sort = "name";
  Result<RunPage> page = querier.SearchRuns(s);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 3u);
  EXPECT_EQ(page->rows.front().info.name, "resnet-a");
}

// SortRuns is what a fan-out orders the union of several queriers' rows with.
TEST(SortRunsTest, MergesRowsFromSeveralSources) {
  auto row = [](const std::string& id, double start, std::optional<double> metric) {
    RunRow r;
    r.info.id = id;
    r.info.name = id;
    r.info.start_time = start;
    if (metric) r.latest.push_back({"acc", storage::Point{1, 0, *metric}});
    return r;
  };
  std::vector<RunRow> rows = {row("a", 3, 0.5), row("b", 1, std::nullopt), row("c", 2, 0.9)};
  Result<RunOrder> order = ParseRunOrder("-metric:acc");
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(order->metric, "acc");
  SortRuns(*order, &rows);
  EXPECT_EQ(rows[0].info.id, "c");
  EXPECT_EQ(rows[1].info.id, "a");
  EXPECT_EQ(rows[2].info.id, "b");
  order = ParseRunOrder("start_time");
  ASSERT_TRUE(order.ok());
  SortRuns(*order, &rows);
  EXPECT_EQ(rows[0].info.id, "b");
  EXPECT_FALSE(ParseRunOrder("metric").ok());
}

}  // namespace
}  // namespace trainwatch::query
