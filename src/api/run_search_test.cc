// GET /api/v1/runs parameters into a query::RunSearch.
#include "api/run_search.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/http_target.h"

namespace trainwatch::api {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

HttpRequest Get(const std::string& target) {
  RequestTarget parsed = ParseTarget(target);
  HttpRequest req;
  req.method = "GET";
  req.path = parsed.path;
  req.query = parsed.query;
  return req;
}

// The 400's message, or "" when the query parses.
std::string Error(const std::string& target, query::RunSearch* search = nullptr) {
  query::RunSearch ignored;
  std::optional<HttpResponse> error = ParseRunSearch(Get(target), search ? search : &ignored);
  if (!error) return "";
  EXPECT_EQ(error->status, 400);
  return error->body;
}

TEST(RunSearchParamsTest, DefaultsMatchEveryRunNewestFirst) {
  query::RunSearch s;
  ASSERT_EQ(Error("/api/v1/runs", &s), "");
  EXPECT_EQ(s.project, "");
  EXPECT_EQ(s.name_regex, "");
  EXPECT_TRUE(s.tags.empty());
  EXPECT_TRUE(s.config.empty());
  EXPECT_EQ(s.sort, "-start_time");
  EXPECT_EQ(s.offset, 0u);
  EXPECT_EQ(s.limit, 100u);
  EXPECT_TRUE(s.latest.empty());
}

TEST(RunSearchParamsTest, ReadsEveryFilter) {
  query::RunSearch s;
  ASSERT_EQ(Error("/r?project=vision&q=res%2Bnet&tag=a&tag=b%20c&status=finished&group=sweep"
                  "&config.lr=0.001&config.opt.name=adam&sort=-metric:acc&latest=loss,,acc,&limit="
                  "20&offset=40",
                  &s),
            "");
  EXPECT_EQ(s.project, "vision");
  EXPECT_EQ(s.name_regex, "res+net");
  EXPECT_THAT(s.tags, ElementsAre("a", "b c"));
  EXPECT_EQ(s.status, "finished");
  EXPECT_EQ(s.group, "sweep");
  EXPECT_THAT(s.config, ElementsAre(Pair("lr", "0.001"), Pair("opt.name", "adam")));
  EXPECT_EQ(s.sort, "-metric:acc");
  EXPECT_THAT(s.latest, ElementsAre("loss", "acc"));  // empty names dropped
  EXPECT_EQ(s.limit, 20u);
  EXPECT_EQ(s.offset, 40u);
}

TEST(RunSearchParamsTest, LimitIsCutToAPageAndBothCountsAreNamedWhenMalformed) {
  query::RunSearch s;
  ASSERT_EQ(Error("/r?limit=1000000", &s), "");
  EXPECT_EQ(s.limit, kMaxRunsPerPage);
  ASSERT_EQ(Error("/r?limit=0&offset=", &s), "");
  EXPECT_EQ(s.limit, 0u);
  for (const char* bad : {"-1", "ten", "1.5", " 3"}) {
    EXPECT_THAT(Error(std::string("/r?limit=") + bad),
                ::testing::HasSubstr("limit must be a non-negative integer"))
        << bad;
    EXPECT_THAT(Error(std::string("/r?offset=") + bad),
                ::testing::HasSubstr("offset must be a non-negative integer"))
        << bad;
  }
}

}  // namespace
}  // namespace trainwatch::api
