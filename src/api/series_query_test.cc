#include "api/series_query.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/http_target.h"

namespace trainwatch::api {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr size_t kMaxRaw = 1000;

HttpRequest Get(const std::string& target) {
  RequestTarget parsed = ParseTarget(target);
  HttpRequest req;
  req.method = "GET";
  req.path = parsed.path;
  req.query = parsed.query;
  return req;
}

// The 400's message, or "" when the query parses.
std::string Error(const std::string& target, SeriesQuery* q = nullptr) {
  SeriesQuery ignored;
  std::optional<HttpResponse> error = ParseSeriesQuery(Get(target), kMaxRaw, q ? q : &ignored);
  if (!error) return "";
  EXPECT_EQ(error->status, 400);
  return error->body;
}

TEST(SeriesQueryTest, DefaultsForEverythingButTheRuns) {
  SeriesQuery q;
  ASSERT_EQ(Error("/api/v1/series?run=a&run=b%20c", &q), "");
  EXPECT_EQ(q.project, "default");
  EXPECT_THAT(q.runs, ElementsAre("a", "b c"));
  EXPECT_EQ(q.x_text, "step");
  EXPECT_EQ(q.axis, query::XAxis::kStep);
  EXPECT_EQ(q.from, -INFINITY);
  EXPECT_EQ(q.to, INFINITY);
  EXPECT_EQ(q.buckets, 0);
  EXPECT_EQ(q.limit, kMaxRaw);
}

TEST(SeriesQueryTest, ReadsEveryParameter) {
  SeriesQuery q;
  ASSERT_EQ(Error("/s?project=vision&run=r1&x=relative&from=-1.5&to=1e3&buckets=500&limit=10", &q),
            "");
  EXPECT_EQ(q.project, "vision");
  EXPECT_EQ(q.axis, query::XAxis::kRelativeTime);
  EXPECT_EQ(q.x_text, "relative");
  EXPECT_EQ(q.from, -1.5);
  EXPECT_EQ(q.to, 1000);
  EXPECT_EQ(q.buckets, 500);
  EXPECT_EQ(q.limit, 10u);
  ASSERT_EQ(Error("/s?run=r&x=time", &q), "");
  EXPECT_EQ(q.axis, query::XAxis::kWallTime);
  ASSERT_EQ(Error("/s?run=r&x=", &q), "");  // empty: step
  EXPECT_EQ(q.axis, query::XAxis::kStep);
  EXPECT_EQ(q.x_text, "");
}

TEST(SeriesQueryTest, RunsAreRequiredAndBounded) {
  EXPECT_THAT(Error("/s"), HasSubstr("'run' (one or more) is required"));
  std::string many = "/s?";
  for (size_t i = 0; i <= kMaxSeriesPerQuery; ++i) many += "run=r" + std::to_string(i) + "&";
  EXPECT_THAT(Error(many), HasSubstr("too many runs"));
  many.resize(many.rfind("run="));
  EXPECT_EQ(Error(many), "");  // exactly kMaxSeriesPerQuery
}

TEST(SeriesQueryTest, MalformedParametersAreNamed) {
  EXPECT_THAT(Error("/s?run=r&x=epoch"), HasSubstr("x must be step, time or relative"));
  for (const char* from : {"abc", "1x", "nan", "inf", "-Infinity", "1e999", " 1"}) {
    EXPECT_THAT(Error(std::string("/s?run=r&from=") + from),
                HasSubstr("from must be a finite number"))
        << from;
  }
  EXPECT_THAT(Error("/s?run=r&to=NaN"), HasSubstr("to must be a finite number"));
  for (const char* buckets : {"0", "-1", "100001", "1.5", "x"}) {
    EXPECT_THAT(Error(std::string("/s?run=r&buckets=") + buckets),
                HasSubstr("buckets must be an integer from 1 to 100000"))
        << buckets;
  }
  EXPECT_EQ(Error("/s?run=r&buckets=100000"), "");
  for (const char* limit : {"0", "-5", "1001", "ten"}) {
    EXPECT_THAT(Error(std::string("/s?run=r&limit=") + limit),
                HasSubstr("limit must be an integer from 1 to 1000 (--max-raw-points)"))
        << limit;
  }
  EXPECT_EQ(Error("/s?run=r&limit=1000"), "");
}

TEST(SeriesQueryTest, RankPicksOneRanksSeries) {
  SeriesQuery q;
  ASSERT_EQ(Error("/api/v1/series?run=a", &q), "");
  EXPECT_FALSE(q.rank.has_value());
  EXPECT_EQ(q.Selection().rank, 0u) << "no rank: the run-level series";
  ASSERT_EQ(Error("/api/v1/series?run=a&rank=1023", &q), "");
  EXPECT_EQ(q.rank, 1023u);
  EXPECT_EQ(q.Selection().rank, 1023u);
  for (const char* bad : {"-1", "x", "1.5", "2147483648"}) {
    EXPECT_THAT(Error(std::string("/api/v1/series?run=a&rank=") + bad), HasSubstr("rank must be"))
        << bad;
  }
}

TEST(SeriesQueryTest, AnEmptyValueIsTheDefault) {
  SeriesQuery q;
  ASSERT_EQ(Error("/s?run=r&from=&to=&buckets=&limit=", &q), "");
  EXPECT_EQ(q.from, -INFINITY);
  EXPECT_EQ(q.to, INFINITY);
  EXPECT_EQ(q.buckets, 0);
  EXPECT_EQ(q.limit, kMaxRaw);
}

// The 400's message of a single-series or batch query, or "" when it parses.
std::string SingleError(const std::string& target, SeriesQuery* q = nullptr) {
  SeriesQuery ignored;
  std::optional<HttpResponse> error =
      ParseSingleSeriesQuery(Get(target), kMaxRaw, q ? q : &ignored);
  if (!error) return "";
  EXPECT_EQ(error->status, 400);
  return error->body;
}

std::string BatchError(const std::string& target, SeriesQuery* q = nullptr) {
  SeriesQuery ignored;
  std::optional<HttpResponse> error = ParseSeriesBatchQuery(Get(target), kMaxRaw, q ? q : &ignored);
  if (!error) return "";
  EXPECT_EQ(error->status, 400);
  return error->body;
}

TEST(SeriesQueryTest, OneSeriesNeedsAMetricAndBecomesARawOrDownsampledRequest) {
  EXPECT_THAT(SingleError("/s?run=r"), HasSubstr("query parameter 'metric' is required"));
  EXPECT_THAT(SingleError("/s?run=r&metric="), HasSubstr("query parameter 'metric' is required"));
  EXPECT_THAT(SingleError("/s?metric=loss"),
              HasSubstr("'run' (one or more) is required"));  // runs first
  SeriesQuery q;
  ASSERT_EQ(SingleError("/s?project=p&run=a&run=b&metric=loss&metric=acc&from=3&to=9&limit=7", &q),
            "");
  EXPECT_THAT(q.metrics, ElementsAre("loss"));  // the first one
  query::RawRequest raw = q.Raw();
  EXPECT_EQ(raw.selection.project, "p");
  EXPECT_THAT(raw.selection.runs, ElementsAre("a", "b"));
  EXPECT_EQ(raw.selection.from, 3);
  EXPECT_EQ(raw.selection.to, 9);
  EXPECT_EQ(raw.metric, "loss");
  EXPECT_EQ(raw.limit, 7u);
  ASSERT_EQ(SingleError("/s?run=a&metric=loss&x=time&buckets=20", &q), "");
  query::DownsampleRequest down = q.Downsampled();
  EXPECT_EQ(down.selection.axis, query::XAxis::kWallTime);
  EXPECT_THAT(down.metrics, ElementsAre("loss"));
  EXPECT_EQ(down.buckets, 20u);
}

TEST(SeriesQueryTest, BatchNeedsMetricsAndBucketsWithinTheSeriesCap) {
  EXPECT_THAT(BatchError("/s?run=r&buckets=5"),
              HasSubstr("query parameter 'metric' (one or more) is required"));
  EXPECT_THAT(BatchError("/s?run=r&metric=m"), HasSubstr("query parameter 'buckets' is required"));
  EXPECT_THAT(BatchError("/s?run=r&metric=m&buckets=0"),
              HasSubstr("buckets must be an integer from 1 to 100000"));
  std::string many = "/s?buckets=5&metric=a&metric=b";
  for (size_t i = 0; i < kMaxSeriesPerQuery / 2; ++i) many += "&run=r" + std::to_string(i);
  EXPECT_EQ(BatchError(many), "");  // exactly kMaxSeriesPerQuery series
  EXPECT_THAT(BatchError(many + "&metric=c"),
              HasSubstr("more than 1000 series (runs × metrics) in one query"));
  SeriesQuery q;
  ASSERT_EQ(BatchError("/s?run=r&metric=m1&metric=m2&buckets=9&x=relative", &q), "");
  query::DownsampleRequest down = q.Downsampled();
  EXPECT_THAT(down.metrics, ElementsAre("m1", "m2"));
  EXPECT_EQ(down.buckets, 9u);
  EXPECT_EQ(down.selection.axis, query::XAxis::kRelativeTime);
}

}  // namespace
}  // namespace trainwatch::api
