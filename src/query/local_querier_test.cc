// The LocalQuerier over a real Engine: raw pages, downsampling on every axis (equal to folding
// every visible point), grids, superseded points, export windows.
#include "query/local_querier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "query/query_test_util.h"

namespace trainwatch::query {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

std::vector<int64_t> StepsOf(const std::vector<storage::Point>& points) {
  std::vector<int64_t> out;
  for (const storage::Point& p : points) out.push_back(p.step);
  return out;
}

std::vector<std::pair<int64_t, double>> Ramp(int64_t first, int64_t last) {
  std::vector<std::pair<int64_t, double>> rows;
  for (int64_t s = first; s <= last; ++s) rows.emplace_back(s, static_cast<double>(s) * 10);
  return rows;
}

class LocalQuerierTest : public QueryEngineTest {
 protected:
  RawRequest Raw(std::vector<std::string> runs, size_t limit, XAxis axis = XAxis::kStep,
                 double from = -INFINITY, double to = INFINITY) {
    RawRequest r;
    r.selection = SeriesSelection{"p", std::move(runs), axis, from, to};
    r.metric = "loss";
    r.limit = limit;
    return r;
  }

  // Every visible point of p/<run>/loss.
  std::vector<storage::Point> All(const std::string& run) {
    std::vector<storage::Point> out;
    EXPECT_TRUE(engine_->ReadSeries({"p", run, "loss"}, {}, &out).ok());
    return out;
  }

  // Downsamples p/r/loss and checks it against a Downsampler fed every visible point.
  void ExpectBruteForce(XAxis axis, double from, double to, uint32_t buckets, double origin) {
    DownsampleRequest request{SeriesSelection{"p", {"r"}, axis, from, to}, {"loss"}, buckets};
    Result<std::vector<DownsampledMetric>> got = querier_->Downsample(request);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), 1u);
    const DownsampledSeries& series = got->front().series.front();
    ASSERT_TRUE(series.status.ok()) << series.status.ToString();
    Downsampler brute(got->front().grid, axis, origin);
    for (const storage::Point& p : All("r")) brute.AddPoint(p);
    std::vector<Bucket> want = brute.Finish();
    const std::string where = std::to_string(buckets) + " buckets over " + std::to_string(from) +
                              ".." + std::to_string(to) + " on axis " +
                              std::to_string(static_cast<int>(axis));
    ASSERT_EQ(series.buckets.size(), want.size()) << where;
    for (size_t i = 0; i < want.size(); ++i) {
      const Bucket& b = series.buckets[i];
      EXPECT_EQ(b.index, want[i].index) << where;
      EXPECT_EQ(b.count, want[i].count) << where;
      EXPECT_EQ(b.nan_count, want[i].nan_count) << where;
      EXPECT_EQ(b.min, want[i].min) << where;
      EXPECT_EQ(b.max, want[i].max) << where;
      EXPECT_EQ(b.first_step, want[i].first_step) << where;
      EXPECT_EQ(b.last_step, want[i].last_step) << where;
      EXPECT_EQ(Bits(b.first), Bits(want[i].first)) << where;
      EXPECT_EQ(Bits(b.last), Bits(want[i].last)) << where;
    }
  }

  void SetUp() override { Reopen(/*chunk_points=*/4); }

  // A fresh engine over the same directory, and a querier over it.
  void Reopen(size_t chunk_points) {
    querier_.reset();
    Open(chunk_points);
    querier_ = std::make_unique<LocalQuerier>(*engine_);
  }

  std::unique_ptr<LocalQuerier> querier_;
};

TEST_F(LocalQuerierTest, RawRunsShareTheLimitInOrder) {
  Write("p", "a", "loss", Ramp(0, 9));
  Write("p", "b", "loss", Ramp(0, 9));
  std::vector<RawSeries> got = querier_->ReadRaw(Raw({"a", "b"}, 15));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].run, "a");
  EXPECT_EQ(got[0].points.size(), 10u);
  EXPECT_FALSE(got[0].next_from);
  EXPECT_EQ(got[0].read, 10u);
  EXPECT_THAT(StepsOf(got[1].points), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_EQ(got[1].next_from, 5);
  EXPECT_EQ(got[1].read, 5u);

  // A run reached with nothing left reads no point but says where its points start.
  got = querier_->ReadRaw(Raw({"a", "b"}, 10));
  EXPECT_EQ(got[0].points.size(), 10u);
  EXPECT_FALSE(got[0].next_from);
  EXPECT_THAT(got[1].points, IsEmpty());
  EXPECT_EQ(got[1].next_from, 0);
  EXPECT_EQ(got[1].read, 0u);

  // The next page starts where the last one said.
  RawRequest next = Raw({"b"}, 3, XAxis::kStep, 5);
  got = querier_->ReadRaw(next);
  EXPECT_THAT(StepsOf(got[0].points), ElementsAre(5, 6, 7));
  EXPECT_EQ(got[0].next_from, 8);
}

TEST_F(LocalQuerierTest, RawUnknownRunOrMetricIsItsOwnError) {
  Write("p", "a", "loss", Ramp(0, 2));
  std::vector<RawSeries> got = querier_->ReadRaw(Raw({"zz", "a"}, 100));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status.code(), StatusCode::kNotFound);
  EXPECT_EQ(got[0].status.message(), "no metric 'loss' in run 'zz'");
  EXPECT_THAT(got[0].points, IsEmpty());
  EXPECT_TRUE(got[1].status.ok());
  EXPECT_EQ(got[1].points.size(), 3u);
}

TEST_F(LocalQuerierTest, RawStepRangesRoundInwardAndSaturate) {
  Write("p", "a", "loss", Ramp(-3, 9));
  EXPECT_THAT(StepsOf(querier_->ReadRaw(Raw({"a"}, 100, XAxis::kStep, 2.5, 6.5))[0].points),
              ElementsAre(3, 4, 5, 6));
  EXPECT_THAT(StepsOf(querier_->ReadRaw(Raw({"a"}, 100, XAxis::kStep, -1e300, -1))[0].points),
              ElementsAre(-3, -2, -1));
  EXPECT_EQ(querier_->ReadRaw(Raw({"a"}, 100, XAxis::kStep, 8, 1e300))[0].points.size(), 2u);
  // Ranges holding no int64 step hold no point (not every point).
  EXPECT_THAT(querier_->ReadRaw(Raw({"a"}, 100, XAxis::kStep, 1e300, 1e301))[0].points, IsEmpty());
  EXPECT_THAT(querier_->ReadRaw(Raw({"a"}, 100, XAxis::kStep, -1e301, -1e300))[0].points,
              IsEmpty());
}

TEST_F(LocalQuerierTest, RawTimeAxesFilterByTimeAndSayTruncated) {
  WriteMetadata("p", "a", [](v1::RunMetadata* m) { m->set_start_time(kEpoch + 2); });
  Write("p", "a", "loss", Ramp(0, 9));  // step s at kEpoch + s
  auto got = querier_->ReadRaw(Raw({"a"}, 100, XAxis::kWallTime, kEpoch + 3, kEpoch + 5));
  EXPECT_THAT(StepsOf(got[0].points), ElementsAre(3, 4, 5));
  EXPECT_FALSE(got[0].truncated);
  EXPECT_FALSE(got[0].next_from);
  got = querier_->ReadRaw(Raw({"a"}, 100, XAxis::kRelativeTime, 3, 5));  // from the run's start
  EXPECT_THAT(StepsOf(got[0].points), ElementsAre(5, 6, 7));
  // The limit counts points read by step, before the time filter: 4 read, 1 within the range.
  got = querier_->ReadRaw(Raw({"a"}, 4, XAxis::kWallTime, kEpoch + 3, kEpoch + 5));
  EXPECT_THAT(StepsOf(got[0].points), ElementsAre(3));
  EXPECT_TRUE(got[0].truncated);
  EXPECT_FALSE(got[0].next_from);
  EXPECT_EQ(got[0].read, 4u);
}

// Downsampling over sealed chunks, partly hidden chunks (a rewind) and the head equals folding
// every visible point, on every axis.
TEST_F(LocalQuerierTest, DownsampleMatchesBruteForceOnEveryAxis) {
  Reopen(/*chunk_points=*/64);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 1);
  std::vector<std::pair<int64_t, double>> rows;
  double v = 0;
  for (int s = 0; s < 3000; ++s) {
    v += noise(rng);
    double x = v;
    if (s % 577 == 0) x = 1e6;  // single-point spikes
    if (s % 911 == 0) x = std::numeric_limits<double>::quiet_NaN();
    rows.emplace_back(s, x);
  }
  Write("p", "r", "loss", rows);
  Write("p", "r", "loss", {{1500, 42.0}, {1501, -42.0}});  // a rewind in the middle
  engine_->WaitForSealer();
  for (uint32_t buckets : {1u, 7u, 100u, 2000u, 5000u}) {
    for (auto [from, to] : {std::pair<double, double>{0, 1501}, {13.5, 900.25}, {1400, 1501}}) {
      ExpectBruteForce(XAxis::kStep, from, to, buckets, 0);
      ExpectBruteForce(XAxis::kWallTime, kEpoch + from, kEpoch + to, buckets, 0);
      ExpectBruteForce(XAxis::kRelativeTime, from, to, buckets, kEpoch);
    }
  }
  ExpectBruteForce(XAxis::kStep, -INFINITY, INFINITY, 50, 0);  // the grid from the data
}

TEST_F(LocalQuerierTest, OneGridPerMetricOverTheRunsJointRange) {
  Write("p", "a", "loss", Ramp(10, 20));
  Write("p", "b", "loss", Ramp(0, 15));
  Write("p", "a", "acc", Ramp(100, 100));
  DownsampleRequest request{SeriesSelection{"p", {"a", "b", "zz"}}, {"loss", "acc", "none"}, 4};
  Result<std::vector<DownsampledMetric>> got = querier_->Downsample(request);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 3u);
  const DownsampledMetric& loss = (*got)[0];
  EXPECT_EQ(loss.metric, "loss");
  EXPECT_EQ(loss.grid.from, 0);
  EXPECT_EQ(loss.grid.to, 20);
  EXPECT_EQ(loss.grid.count, 4u);
  ASSERT_EQ(loss.series.size(), 3u);
  EXPECT_EQ(loss.series[0].buckets.front().first_step, 10);
  EXPECT_EQ(loss.series[1].buckets.back().last_step, 15);
  EXPECT_EQ(loss.series[2].status.message(), "no metric 'loss' in run 'zz'");
  EXPECT_THAT(loss.series[2].buckets, IsEmpty());
  EXPECT_EQ((*got)[1].grid.from, 100);  // a single point: a grid of width 0
  EXPECT_EQ((*got)[1].grid.to, 100);
  EXPECT_EQ((*got)[1].series[0].buckets.front().count, 1u);
  EXPECT_EQ((*got)[2].grid.from, 0);  // no data anywhere: [0, 0]
  EXPECT_EQ((*got)[2].grid.to, 0);

  request.selection.from = 12;  // one end given, the other from the data
  got = querier_->Downsample(request);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].grid.from, 12);
  EXPECT_EQ((*got)[0].grid.to, 20);
  EXPECT_EQ((*got)[2].grid.to, 12);

  request.selection.from = -INFINITY;
  request.selection.to = -5;  // below every point of loss: the grid would be empty
  got = querier_->Downsample(request);
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(), "to is below from");
}

TEST_F(LocalQuerierTest, XRangeIsTheUnionOnTheAxisAsked) {
  WriteMetadata("p", "b", [](v1::RunMetadata* m) { m->set_start_time(kEpoch - 100); });
  Write("p", "a", "loss", Ramp(10, 20));
  Write("p", "b", "loss", Ramp(0, 15));
  SeriesSelection s{"p", {"a", "b", "zz"}};
  Result<AxisRange> r = querier_->XRange(s, "loss");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->lo, 0);
  EXPECT_EQ(r->hi, 20);
  s.axis = XAxis::kWallTime;
  r = querier_->XRange(s, "loss");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->lo, kEpoch);
  EXPECT_EQ(r->hi, kEpoch + 20);
  s.axis = XAxis::kRelativeTime;  // a from its first point, b from its start 100 s earlier
  r = querier_->XRange(s, "loss");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->lo, 0);
  EXPECT_EQ(r->hi, 115);
  EXPECT_EQ(querier_->XRange(s, "acc").status().code(), StatusCode::kNotFound);
}

TEST_F(LocalQuerierTest, RunsAndTheirMetrics) {
  Write("p", "a", "loss", Ramp(0, 5));
  Write("p", "a", "acc", Ramp(2, 3));
  Result<storage::RunInfo> run = querier_->GetRun({"p", "a"});
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->id, "a");
  EXPECT_EQ(run->start_time, kEpoch);
  run = querier_->GetRun({"p", "zz"});
  EXPECT_EQ(run.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(run.status().message(), "no run 'zz' in project 'p'");
  std::vector<storage::MetricInfo> metrics = querier_->ListMetrics({"p", "a"});
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[0].name, "acc");
  EXPECT_EQ(metrics[1].count, 6u);
  EXPECT_THAT(querier_->ListMetrics({"q", "a"}), IsEmpty());
}

TEST_F(LocalQuerierTest, SupersededPointsOfARewoundSeries) {
  Write("p", "a", "loss", Ramp(0, 5));
  Write("p", "a", "loss", {{3, -1.0}});  // a new timeline from step 3: 3, 4, 5 hidden
  Result<std::vector<storage::SupersededPoint>> hidden =
      querier_->ReadSuperseded({"p", "a", "loss"});
  ASSERT_TRUE(hidden.ok());
  ASSERT_EQ(hidden->size(), 3u);
  EXPECT_EQ((*hidden)[0].point.step, 3);
  EXPECT_EQ((*hidden)[0].point.value, 30);
  EXPECT_EQ((*hidden)[0].gen, 0u);
  EXPECT_THAT(StepsOf(All("a")), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(querier_->ReadSuperseded({"p", "a", "acc"}).status().code(), StatusCode::kNotFound);
}

TEST_F(LocalQuerierTest, ExportWindowsHoldEveryScalarPointByStepAndTime) {
  Write("p", "a", "loss", Ramp(0, 9));
  Write("p", "a", "acc", {{2, 0.5}, {4, 0.25}});
  Write("p", "a", "late", {{4, 7.0}}, /*time_offset=*/0.5);  // same step, later time: its own line
  Write("p", "a", "empty", {});
  Result<ExportPlan> plan = querier_->PlanExport({"p", "a"});
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->metrics, ElementsAre("acc", "late", "loss"));
  EXPECT_EQ(plan->first_step, 0);
  EXPECT_EQ(plan->last_step, 9);
  EXPECT_EQ(plan->points, 13u);

  std::vector<ExportCell> cells;
  ASSERT_TRUE(querier_->ReadExportWindow(*plan, 2, 4, &cells).ok());
  std::vector<std::tuple<int64_t, uint32_t, double>> got;
  for (const ExportCell& c : cells) got.emplace_back(c.step, c.metric, c.value);
  EXPECT_THAT(got, ElementsAre(std::tuple<int64_t, uint32_t, double>{2, 0, 0.5},
                               std::tuple<int64_t, uint32_t, double>{2, 2, 20},
                               std::tuple<int64_t, uint32_t, double>{3, 2, 30},
                               std::tuple<int64_t, uint32_t, double>{4, 0, 0.25},
                               std::tuple<int64_t, uint32_t, double>{4, 2, 40},
                               std::tuple<int64_t, uint32_t, double>{4, 1, 7}));
  EXPECT_EQ(cells[4].time, kEpoch + 4);
  EXPECT_EQ(cells[5].time, kEpoch + 4.5);

  plan = querier_->PlanExport({"p", "zz"});
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->metrics, IsEmpty());
}

}  // namespace
}  // namespace trainwatch::query
