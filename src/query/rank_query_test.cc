// Distributed runs in the query layer: across-rank aggregates checked against a brute-force
// computation over random data (through the real engine, with sealed chunks, heads and NaNs), the
// rank matrix, the ranks table, one rank's series, and export lines per rank.
#include "query/rank_query.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "query/local_querier.h"
#include "query/query_test_util.h"

namespace trainwatch::query {
namespace {

class RankQueryTest : public QueryEngineTest {
 protected:
  // One batch of `rank` (world size `world`) with the given rows of `metric`.
  void WriteRank(uint32_t rank, uint32_t world, const std::string& metric,
                 const std::vector<std::pair<int64_t, double>>& rows, double time_offset = 0) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run("job");
    batch->mutable_rank()->set_rank(rank);
    batch->mutable_rank()->set_world_size(world);
    batch->mutable_rank()->set_host("h" + std::to_string(rank));
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name(metric);
    for (auto [step, value] : rows) {
      batch->add_steps(step);
      batch->add_times(kEpoch + time_offset + static_cast<double>(step));
      column->add_values(value);
    }
    storage::WriteAndWait(*engine_, std::move(request));
  }

  RankRequest Request(uint32_t buckets, double from = -INFINITY, double to = INFINITY) {
    RankRequest r;
    r.metric = {"p", "job", "loss"};
    r.buckets = buckets;
    r.from = from;
    r.to = to;
    return r;
  }
};

// Every value of every rank, then per bucket the statistics computed the obvious way.
struct BruteBucket {
  std::vector<std::pair<double, uint32_t>> values;  // non-NaN (value, rank)
  uint64_t count = 0, nan_count = 0;
  std::set<uint32_t> ranks;
  int64_t first_step = std::numeric_limits<int64_t>::max(), last_step = -1;
};

double BruteQuantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  double frac = pos - static_cast<double>(lo);
  if (frac == 0 || v[lo] == v[hi]) return v[lo];
  return v[lo] + (v[hi] - v[lo]) * frac;
}

TEST_F(RankQueryTest, AggregatesMatchABruteForceComputationOverRandomData) {
  Open(/*chunk_points=*/16);
  std::mt19937_64 rng(20261202);
  std::normal_distribution<double> noise(0, 1);
  constexpr uint32_t kRanks = 13;
  constexpr int64_t kSteps = 157;
  // rank -> step -> value (some ranks skip steps, some values are NaN or infinite).
  std::map<uint32_t, std::map<int64_t, double>> data;
  for (uint32_t r = 0; r < kRanks; ++r) {
    std::vector<std::pair<int64_t, double>> rows;
    for (int64_t s = 0; s < kSteps + static_cast<int64_t>(r % 3); ++s) {
      if ((s + r) % 11 == 0) continue;  // a gap
      double v = 10.0 / (1 + s) + 0.3 * r + noise(rng);
      if ((s * 7 + r) % 53 == 0) v = std::nan("");
      if (s == 77 && r == 5) v = std::numeric_limits<double>::infinity();
      if (s % 9 == 0 && r == 2) v = 1.5;  // ties across ranks
      if (s % 9 == 0 && r == 7) v = 1.5;
      rows.emplace_back(s, v);
      data[r][s] = v;
    }
    // Written in two batches: sealed chunks and a head.
    size_t half = rows.size() / 2;
    WriteRank(r, kRanks, "loss", {rows.begin(), rows.begin() + half});
    WriteRank(r, kRanks, "loss", {rows.begin() + half, rows.end()});
  }
  // Before a restart (chunks in memory) and after it (chunks read from the store, without times).
  for (bool reopened : {false, true}) {
    if (reopened) Open(/*chunk_points=*/16);
    LocalQuerier querier(*engine_);
    for (uint32_t buckets : {1u, 7u, 40u, 159u, 500u}) {
      for (auto [from, to] :
           std::vector<std::pair<double, double>>{{-INFINITY, INFINITY}, {10, 100}, {33.5, 34.5}}) {
        SCOPED_TRACE("buckets " + std::to_string(buckets) + " from " + std::to_string(from) +
                     (reopened ? " reopened" : ""));
        Result<RankAggregates> got = querier.AggregateRanks(Request(buckets, from, to));
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(got->rank_count, kRanks);
        // The grid: the given ends, else the ranks' joint range.
        int64_t lo = std::numeric_limits<int64_t>::max(), hi = -1;
        for (const auto& [rank, steps] : data) {
          lo = std::min(lo, steps.begin()->first);
          hi = std::max(hi, steps.rbegin()->first);
        }
        EXPECT_EQ(hi, kSteps + 1) << "rank 2 goes furthest";
        const BucketGrid grid = got->grid;
        EXPECT_EQ(grid.from, std::isfinite(from) ? from : static_cast<double>(lo));
        EXPECT_EQ(grid.to, std::isfinite(to) ? to : static_cast<double>(hi));
        std::map<uint32_t, BruteBucket> expected;
        for (const auto& [rank, steps] : data) {
          for (const auto& [step, v] : steps) {
            int64_t i = grid.IndexOf(static_cast<double>(step));
            if (i < 0) continue;
            BruteBucket& b = expected[static_cast<uint32_t>(i)];
            ++b.count;
            b.ranks.insert(rank);
            b.first_step = std::min(b.first_step, step);
            b.last_step = std::max(b.last_step, step);
            if (std::isnan(v))
              ++b.nan_count;
            else
              b.values.emplace_back(v, rank);
          }
        }
        ASSERT_EQ(got->buckets.size(), expected.size());
        size_t k = 0;
        for (auto& [index, want] : expected) {
          const RankBucket& b = got->buckets[k++];
          ASSERT_EQ(b.index, index);
          EXPECT_EQ(b.count, want.count);
          EXPECT_EQ(b.nan_count, want.nan_count);
          EXPECT_EQ(b.ranks, want.ranks.size());
          EXPECT_EQ(b.first_step, want.first_step);
          EXPECT_EQ(b.last_step, want.last_step);
          if (want.values.empty()) {
            EXPECT_TRUE(std::isnan(b.min));
            continue;
          }
          // min/max: the value, and the lowest rank holding it.
          auto by_value_then_rank = want.values;
          std::sort(by_value_then_rank.begin(), by_value_then_rank.end());
          EXPECT_EQ(b.min, by_value_then_rank.front().first);
          EXPECT_EQ(b.min_rank, by_value_then_rank.front().second);
          double max = by_value_then_rank.back().first;
          uint32_t max_rank = std::numeric_limits<uint32_t>::max();
          for (auto [v, r] : want.values) {
            if (v == max) max_rank = std::min(max_rank, r);
          }
          EXPECT_EQ(b.max, max);
          EXPECT_EQ(b.max_rank, max_rank);
          std::vector<double> values;
          double sum = 0;
          size_t finite = 0;
          for (auto [v, r] : want.values) {
            values.push_back(v);
            if (std::isfinite(v)) {
              sum += v;
              ++finite;
            }
          }
          if (finite > 0) {
            EXPECT_NEAR(b.mean, sum / static_cast<double>(finite), 1e-9);
          } else {
            EXPECT_TRUE(std::isnan(b.mean));
          }
          EXPECT_EQ(b.median, BruteQuantile(values, 0.5));
          EXPECT_EQ(b.p10, BruteQuantile(values, 0.1));
          EXPECT_EQ(b.p90, BruteQuantile(values, 0.9));
        }
      }
    }
  }
}

TEST_F(RankQueryTest, OneStepPerBucketIsTheAcrossRankStatisticOfThatStep) {
  Open();
  for (uint32_t r = 0; r < 5; ++r) WriteRank(r, 5, "loss", {{0, 1.0 + r}, {1, 10.0 - r}});
  LocalQuerier querier(*engine_);
  Result<RankAggregates> got = querier.AggregateRanks(Request(2, 0, 1));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->buckets.size(), 2u);
  const RankBucket& s0 = got->buckets[0];
  EXPECT_EQ(s0.count, 5u);
  EXPECT_EQ(s0.min, 1.0);
  EXPECT_EQ(s0.min_rank, 0u);
  EXPECT_EQ(s0.max, 5.0);
  EXPECT_EQ(s0.max_rank, 4u);
  EXPECT_EQ(s0.median, 3.0);
  EXPECT_EQ(s0.mean, 3.0);
  EXPECT_DOUBLE_EQ(s0.p10, 1.4);
  EXPECT_DOUBLE_EQ(s0.p90, 4.6);
  EXPECT_EQ(got->buckets[1].min_rank, 4u);
  EXPECT_EQ(got->buckets[1].max_rank, 0u);
}

TEST_F(RankQueryTest, UnknownRunOrMetricIsNotFoundAndAnEmptyGridInvalid) {
  Open();
  WriteRank(0, 2, "loss", {{0, 1}});
  LocalQuerier querier(*engine_);
  RankRequest r = Request(4);
  r.metric.run = "nope";
  EXPECT_EQ(querier.AggregateRanks(r).status().code(), StatusCode::kNotFound);
  r = Request(4);
  r.metric.metric = "acc";
  EXPECT_EQ(querier.RankMatrixOf(r).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(querier.AggregateRanks(Request(4, 5, 1)).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RankQueryTest, MatrixHoldsEachRanksBuckets) {
  Open();
  for (uint32_t r = 0; r < 3; ++r) {
    std::vector<std::pair<int64_t, double>> rows;
    for (int64_t s = 0; s < 20; ++s) rows.emplace_back(s, r * 100.0 + s);
    WriteRank(r, 3, "loss", rows);
  }
  LocalQuerier querier(*engine_);
  Result<RankMatrix> m = querier.RankMatrixOf(Request(4));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->rows.size(), 3u);
  EXPECT_EQ(m->grid.from, 0);
  EXPECT_EQ(m->grid.to, 19);
  for (uint32_t r = 0; r < 3; ++r) {
    const RankMatrixRow& row = m->rows[r];
    EXPECT_EQ(row.rank, r);
    ASSERT_EQ(row.buckets.size(), 4u);
    // Bucket 0 holds steps 0..4 (width 4.75).
    EXPECT_EQ(row.buckets[0].count, 5u);
    EXPECT_EQ(row.buckets[0].min, r * 100.0);
    EXPECT_EQ(row.buckets[0].max, r * 100.0 + 4);
    EXPECT_EQ(row.buckets[0].sum, 5 * r * 100.0 + 10);
  }
}

TEST_F(RankQueryTest, RanksTableHasPaceLagAndLiveness) {
  Open();
  // Rank 0 and 1 at 2 steps/s up to step 20; rank 2 at 1 step/s, only to step 10.
  std::vector<std::pair<int64_t, double>> fast, slow;
  for (int64_t s = 0; s <= 20; ++s) fast.emplace_back(s, 1);
  for (int64_t s = 0; s <= 10; ++s) slow.emplace_back(s, 1);
  auto write = [&](uint32_t rank, const std::vector<std::pair<int64_t, double>>& rows,
                   double seconds_per_step, double heartbeat) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run("job");
    batch->mutable_rank()->set_rank(rank);
    batch->mutable_rank()->set_world_size(3);
    batch->mutable_rank()->set_local_rank(rank);
    batch->mutable_rank()->set_host("node");
    batch->mutable_heartbeat()->set_interval_seconds(10);
    batch->mutable_heartbeat()->set_received_time(heartbeat);
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name("loss");
    for (auto [step, value] : rows) {
      batch->add_steps(step);
      batch->add_times(kEpoch + seconds_per_step * static_cast<double>(step));
      column->add_values(value);
    }
    storage::WriteAndWait(*engine_, std::move(request));
  };
  write(0, fast, 0.5, kEpoch + 100);
  write(1, fast, 0.5, kEpoch + 100);
  write(2, slow, 1.0, kEpoch + 50);
  LocalQuerier querier(*engine_);
  Result<RankTable> table = querier.ListRanks({"p", "job"}, kEpoch + 85);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->world_size, 3u);
  EXPECT_EQ(table->median_step, 20);
  ASSERT_EQ(table->ranks.size(), 3u);
  EXPECT_DOUBLE_EQ(table->ranks[0].steps_per_second, 2.0);
  EXPECT_DOUBLE_EQ(table->ranks[2].steps_per_second, 1.0);
  EXPECT_EQ(table->ranks[0].lag, 0);
  EXPECT_EQ(table->ranks[2].lag, 10);
  EXPECT_EQ(table->ranks[2].state.local_rank, 2u);
  EXPECT_EQ(table->ranks[0].liveness, RankLiveness::kRunning);
  EXPECT_EQ(table->ranks[2].liveness, RankLiveness::kDead) << "35 s without a beat (3 × 10 s)";
  table = querier.ListRanks({"p", "job"}, kEpoch + 75);
  EXPECT_EQ(table->ranks[2].liveness, RankLiveness::kRunning) << "25 s: not yet";
  table = querier.ListRanks({"p", "job"}, kEpoch + 81);
  EXPECT_EQ(table->ranks[2].liveness, RankLiveness::kDead) << "three intervals without a beat";
  EXPECT_EQ(table->ranks[0].liveness, RankLiveness::kRunning);
  EXPECT_EQ(querier.ListRanks({"p", "nope"}, 0).status().code(), StatusCode::kNotFound);
}

TEST_F(RankQueryTest, ASeriesReadNamesItsRankAndDefaultsToRankZero) {
  Open();
  WriteRank(0, 2, "loss", {{0, 1}, {1, 2}});
  WriteRank(1, 2, "loss", {{0, 10}, {1, 20}, {2, 30}});
  LocalQuerier querier(*engine_);
  RawRequest raw;
  raw.selection.project = "p";
  raw.selection.runs = {"job"};
  raw.metric = "loss";
  raw.limit = 100;
  std::vector<RawSeries> rank0 = querier.ReadRaw(raw);
  ASSERT_EQ(rank0[0].points.size(), 2u);
  raw.selection.rank = 1;
  std::vector<RawSeries> rank1 = querier.ReadRaw(raw);
  ASSERT_EQ(rank1[0].points.size(), 3u);
  EXPECT_EQ(rank1[0].points[2].value, 30);
  DownsampleRequest down;
  down.selection = raw.selection;
  down.metrics = {"loss"};
  down.buckets = 1;
  Result<std::vector<DownsampledMetric>> d = querier.Downsample(down);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ((*d)[0].series[0].buckets.size(), 1u);
  EXPECT_EQ((*d)[0].series[0].buckets[0].max, 30);
  raw.selection.rank = 5;
  EXPECT_EQ(querier.ReadRaw(raw)[0].status.code(), StatusCode::kNotFound);
}

TEST_F(RankQueryTest, ExportCarriesEveryRank) {
  Open();
  WriteRank(0, 2, "loss", {{0, 1}, {1, 2}});
  WriteRank(1, 2, "loss", {{0, 10}, {1, 20}, {2, 30}});
  LocalQuerier querier(*engine_);
  Result<ExportPlan> plan = querier.PlanExport({"p", "job"});
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->distributed);
  EXPECT_EQ(plan->last_step, 2) << "rank 1 is ahead of the run-level view";
  std::vector<ExportCell> cells;
  ASSERT_TRUE(querier.ReadExportWindow(*plan, 0, 10, &cells).ok());
  ASSERT_EQ(cells.size(), 5u);
  EXPECT_EQ(cells[0].rank, 0u);
  EXPECT_EQ(cells[1].rank, 0u);
  EXPECT_EQ(cells[2].rank, 1u);
  EXPECT_EQ(cells[4].value, 30);
}

// Equal, NaN equal to NaN (a quantile between -Inf and +Inf is NaN either way).
bool Same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(RankAggregatorTest, SelectionAndOrderedRunsMatchSortingEveryValue) {
  std::mt19937_64 rng(20261207);
  constexpr uint32_t kRanks = 37;
  // rank -> its points by step: gaps, many equal values, NaN and ±Inf.
  std::vector<std::vector<storage::Point>> points(kRanks);
  for (uint32_t r = 0; r < kRanks; ++r) {
    for (int64_t s = 0; s < 1000; s += 1 + static_cast<int64_t>(rng() % 3)) {
      double v = static_cast<double>(rng() % 50) / 4;
      if (rng() % 97 == 0) v = std::nan("");
      if (rng() % 211 == 0) v = rng() % 2 ? INFINITY : -INFINITY;
      points[r].push_back({s, 0, v});
    }
  }
  for (uint32_t count : {1u, 3u, 10u, 333u, 1000u, 1500u}) {
    for (auto [from, to] : std::vector<std::pair<double, double>>{{0, 999}, {0.3, 997.7}, {5, 5}}) {
      SCOPED_TRACE("buckets " + std::to_string(count) + " from " + std::to_string(from));
      const BucketGrid grid{from, to, count};
      RankAggregator ordered(grid), any_order(grid);
      std::map<uint32_t, BruteBucket> expected;
      for (uint32_t r = 0; r < kRanks; ++r) {
        const std::vector<storage::Point>& p = points[r];
        // In three slices, as a series' chunks and head come.
        const size_t a = p.size() / 3, b = 2 * p.size() / 3;
        ordered.AddStepOrdered(r, p.data(), p.data() + a);
        ordered.AddStepOrdered(r, p.data() + a, p.data() + b);
        ordered.AddStepOrdered(r, p.data() + b, p.data() + p.size());
        std::vector<storage::Point> shuffled = p;
        std::shuffle(shuffled.begin(), shuffled.end(), rng);
        any_order.Add(r, shuffled.data(), shuffled.data() + shuffled.size());
        for (const storage::Point& q : p) {
          const int64_t i = grid.IndexOf(static_cast<double>(q.step));
          if (i < 0) continue;
          BruteBucket& want = expected[static_cast<uint32_t>(i)];
          ++want.count;
          want.ranks.insert(r);
          want.first_step = std::min(want.first_step, q.step);
          want.last_step = std::max(want.last_step, q.step);
          if (std::isnan(q.value))
            ++want.nan_count;
          else
            want.values.emplace_back(q.value, r);
        }
      }
      const std::vector<RankBucket> got = ordered.Finish();
      const std::vector<RankBucket> got_any = any_order.Finish();
      ASSERT_EQ(got.size(), expected.size());
      ASSERT_EQ(got_any.size(), expected.size());
      size_t k = 0;
      for (auto& [index, want] : expected) {
        for (const RankBucket* b : {&got[k], &got_any[k]}) {
          ASSERT_EQ(b->index, index);
          EXPECT_EQ(b->count, want.count);
          EXPECT_EQ(b->nan_count, want.nan_count);
          EXPECT_EQ(b->ranks, want.ranks.size());
          EXPECT_EQ(b->first_step, want.first_step);
          EXPECT_EQ(b->last_step, want.last_step);
          std::vector<double> values;
          for (auto [v, r] : want.values) values.push_back(v);
          if (values.empty()) {
            EXPECT_TRUE(std::isnan(b->median));
            continue;
          }
          auto sorted = want.values;
          std::sort(sorted.begin(), sorted.end());
          EXPECT_EQ(b->min, sorted.front().first);
          EXPECT_EQ(b->min_rank, sorted.front().second);
          EXPECT_EQ(b->max, sorted.back().first);
          EXPECT_TRUE(Same(b->p10, BruteQuantile(values, 0.1))) << b->p10;
          EXPECT_TRUE(Same(b->median, BruteQuantile(values, 0.5))) << b->median;
          EXPECT_TRUE(Same(b->p90, BruteQuantile(values, 0.9))) << b->p90;
        }
        // The same additions in the same order: the same mean, to the bit.
        EXPECT_TRUE(Same(got[k].mean, got_any[k].mean));
        ++k;
      }
    }
  }
}

TEST_F(RankQueryTest, MatrixMatchesABruteForceComputationWithAndWithoutBlockSummaries) {
  Open(/*chunk_points=*/100);  // chunks of several 32-point blocks
  std::mt19937_64 rng(7);
  constexpr uint32_t kRanks = 5;
  std::map<uint32_t, std::vector<std::pair<int64_t, double>>> data;
  for (uint32_t r = 0; r < kRanks; ++r) {
    std::vector<std::pair<int64_t, double>> rows;
    for (int64_t s = 0; s < 1000; s += 1 + static_cast<int64_t>(rng() % 2)) {
      double v = static_cast<double>(rng() % 1000) / 8 - 60;
      if (rng() % 89 == 0) v = std::nan("");
      rows.emplace_back(s, v);
    }
    WriteRank(r, kRanks, "loss", {rows.begin(), rows.begin() + rows.size() / 2});
    WriteRank(r, kRanks, "loss", {rows.begin() + rows.size() / 2, rows.end()});
    data[r] = rows;
  }
  for (bool reopened : {false, true}) {
    if (reopened) Open(/*chunk_points=*/100);
    LocalQuerier querier(*engine_);
    // 3 and 7 buckets: wider than a block (summaries used); 100 and 700: narrower.
    for (uint32_t buckets : {3u, 7u, 100u, 700u}) {
      SCOPED_TRACE("buckets " + std::to_string(buckets) + (reopened ? " reopened" : ""));
      Result<RankMatrix> m = querier.RankMatrixOf(Request(buckets));
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      ASSERT_EQ(m->rows.size(), kRanks);
      for (const RankMatrixRow& row : m->rows) {
        std::map<uint32_t, Bucket> want;
        for (auto [step, v] : data[row.rank]) {
          const int64_t i = m->grid.IndexOf(static_cast<double>(step));
          if (i >= 0) want[static_cast<uint32_t>(i)].AddPoint({step, 0, v});
        }
        ASSERT_EQ(row.buckets.size(), want.size());
        size_t k = 0;
        for (auto& [index, w] : want) {
          const Bucket& b = row.buckets[k++];
          ASSERT_EQ(b.index, index);
          EXPECT_EQ(b.count, w.count);
          EXPECT_EQ(b.nan_count, w.nan_count);
          EXPECT_EQ(b.min, w.min);
          EXPECT_EQ(b.max, w.max);
          EXPECT_NEAR(b.sum, w.sum, 1e-9 * (1 + std::abs(w.sum)));
          EXPECT_EQ(b.first_step, w.first_step);
          EXPECT_EQ(b.last_step, w.last_step);
        }
      }
    }
  }
}

TEST_F(RankQueryTest, ReadingRanksWithoutTimesLeavesTheSeriesTimesIntact) {
  Open(/*chunk_points=*/4);
  for (uint32_t r = 0; r < 2; ++r) {
    std::vector<std::pair<int64_t, double>> rows;
    for (int64_t s = 0; s < 30; ++s) rows.emplace_back(s, s + r);
    WriteRank(r, 2, "loss", rows, /*time_offset=*/0.25 * r);
  }
  Open(/*chunk_points=*/4);  // the chunks now come from the store
  LocalQuerier querier(*engine_);
  ASSERT_TRUE(querier.AggregateRanks(Request(3)).ok());
  ASSERT_TRUE(querier.RankMatrixOf(Request(3)).ok());
  std::vector<storage::Point> points;
  ASSERT_TRUE(engine_->ReadSeries({"p", "job", "loss", 1}, {}, &points).ok());
  ASSERT_EQ(points.size(), 30u);
  for (const storage::Point& p : points) {
    EXPECT_EQ(p.time, kEpoch + 0.25 + static_cast<double>(p.step)) << "step " << p.step;
  }
}

TEST(QuantileTest, InterpolatesLinearly) {
  EXPECT_EQ(Quantile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_EQ(Quantile({5}, 0.9), 5);
  EXPECT_DOUBLE_EQ(Quantile({0, 10}, 0.1), 1);
  EXPECT_TRUE(std::isnan(Quantile({}, 0.5)));
  EXPECT_EQ(Quantile({-INFINITY, 1, INFINITY}, 0.5), 1);
}

}  // namespace
}  // namespace trainwatch::query
