// LocalQuerier: distributed runs — across-rank aggregates, the rank matrix and the ranks table.
#include <algorithm>
#include <limits>

#include "query/local_querier.h"
#include "storage/series.h"
#include "storage/series_scan.h"

namespace trainwatch::query {
namespace {

bool OverlapsSteps(const Summary& s, const BucketGrid& grid) {
  return static_cast<double>(s.last_step) >= grid.from &&
         static_cast<double>(s.first_step) <= grid.to;
}

// Hands every point of one rank on the grid to a RankAggregator (no summary can stand for the
// points: the percentiles need every value). Steps only: the run clock is not read.
class AggregatingScanner final : public storage::SeriesScanner {
 public:
  AggregatingScanner(RankAggregator& aggregator, const BucketGrid& grid, uint32_t rank)
      : aggregator_(aggregator), grid_(grid), rank_(rank) {}

  bool TakeSummary(const Summary&) override { return false; }
  bool WantsChunk(const Summary& summary) const override { return OverlapsSteps(summary, grid_); }
  void TakePoints(const Point* begin, const Point* end, const Point*,
                  const BlockSummary*) override {
    aggregator_.AddStepOrdered(rank_, begin, end);
  }
  bool NeedsTimes() const override { return false; }

 private:
  RankAggregator& aggregator_;
  const BucketGrid& grid_;
  const uint32_t rank_;
};

// One rank's buckets on the step grid, folding whole chunks from their summaries where they fit.
// Steps only: the buckets' first_time/last_time stay 0 (the run clock is not read).
class MatrixScanner final : public storage::SeriesScanner {
 public:
  explicit MatrixScanner(const BucketGrid& grid) : sampler_(grid, XAxis::kStep, 0), grid_(grid) {}

  bool TakeSummary(const Summary& summary) override { return sampler_.TryAddSummary(summary); }
  bool WantsChunk(const Summary& summary) const override { return OverlapsSteps(summary, grid_); }
  void TakePoints(const Point* begin, const Point* end, const Point* base,
                  const BlockSummary* blocks) override {
    sampler_.AddStepOrdered(begin, end, base, blocks);
  }
  bool NeedsTimes() const override { return false; }
  std::vector<Bucket> Finish() const { return sampler_.Finish(); }

 private:
  Downsampler sampler_;
  const BucketGrid& grid_;
};

// Steps per second over the rank's last (up to) 100 clock points: its recent pace.
double RecentStepsPerSecond(const storage::Engine& engine, const storage::RunKey& run,
                            const storage::RankState& rank) {
  if (rank.last_step < 0) return 0;
  storage::SeriesReadOptions options;
  options.from_step = std::max<int64_t>(0, rank.last_step - 10'000);
  options.to_step = rank.last_step;
  std::vector<Point> clock;
  if (!engine.ReadSeries({run.project, run.run, storage::kClockMetric, rank.rank}, options, &clock)
           .ok() ||
      clock.size() < 2) {
    return 0;
  }
  const Point& last = clock.back();
  const Point& first = clock[clock.size() > 100 ? clock.size() - 100 : 0];
  const double seconds = last.time - first.time;
  if (!(seconds > 0)) return 0;
  return static_cast<double>(last.step - first.step) / seconds;
}

}  // namespace

Result<BucketGrid> LocalQuerier::RankGrid(const RankRequest& request,
                                          std::vector<uint32_t>* ranks) const {
  const storage::SeriesKey& key = request.metric;
  if (!engine_.GetRun(key.project, key.run)) {
    return Status::NotFound("no run '" + key.run + "' in project '" + key.project + "'");
  }
  *ranks = engine_.MetricRanks(key);
  if (ranks->empty()) {
    return Status::NotFound("no metric '" + key.metric + "' in run '" + key.run + "'");
  }
  SeriesSelection selection;
  selection.project = key.project;
  selection.from = request.from;
  selection.to = request.to;
  std::optional<AxisRange> range;
  if (!std::isfinite(request.from) || !std::isfinite(request.to)) {
    for (uint32_t rank : *ranks) {
      storage::SeriesExtent extent;
      storage::SeriesKey series = key;
      series.rank = rank;
      if (!engine_.ReadExtent(series, &extent).ok()) continue;
      const double lo = static_cast<double>(extent.first_step);
      const double hi = static_cast<double>(extent.last_step);
      if (!range) range = AxisRange{lo, hi};
      range->lo = std::min(range->lo, lo);
      range->hi = std::max(range->hi, hi);
    }
  }
  return GridFor(selection, request.buckets, range);
}

Result<RankAggregates> LocalQuerier::AggregateRanks(const RankRequest& request) const {
  std::vector<uint32_t> ranks;
  RankAggregates out;
  TW_ASSIGN_OR_RETURN(out.grid, RankGrid(request, &ranks));
  out.rank_count = static_cast<uint32_t>(ranks.size());
  RankAggregator aggregator(out.grid);
  for (uint32_t rank : ranks) {
    storage::SeriesKey series = request.metric;
    series.rank = rank;
    AggregatingScanner scanner(aggregator, out.grid, rank);
    Status s = engine_.ScanSeries(series, /*block_summaries=*/false, scanner);
    if (s.code() == StatusCode::kNotFound) continue;  // deleted meanwhile
    TW_RETURN_IF_ERROR(s);
  }
  out.buckets = aggregator.Finish();
  return out;
}

Result<RankMatrix> LocalQuerier::RankMatrixOf(const RankRequest& request) const {
  std::vector<uint32_t> ranks;
  RankMatrix out;
  TW_ASSIGN_OR_RETURN(out.grid, RankGrid(request, &ranks));
  out.rows.reserve(ranks.size());
  // A block of kBlockPoints points spans at least kBlockPoints - 1 steps: on a narrower grid no
  // bucket covers a whole block, and summarising blocks would only cost.
  const bool block_summaries = out.grid.Width() > static_cast<double>(storage::kBlockPoints - 1);
  for (uint32_t rank : ranks) {
    storage::SeriesKey series = request.metric;
    series.rank = rank;
    MatrixScanner scanner(out.grid);
    Status s = engine_.ScanSeries(series, block_summaries, scanner);
    if (s.code() == StatusCode::kNotFound) continue;
    TW_RETURN_IF_ERROR(s);
    out.rows.push_back({rank, scanner.Finish()});
  }
  return out;
}

Result<RankTable> LocalQuerier::ListRanks(const storage::RunKey& run, double now) const {
  std::optional<storage::RunInfo> info = engine_.GetRun(run.project, run.run);
  if (!info) return Status::NotFound("no run '" + run.run + "' in project '" + run.project + "'");
  RankTable out;
  out.world_size = info->world_size;
  std::vector<storage::RankState> ranks = engine_.ListRanks(run.project, run.run);
  std::vector<int64_t> steps;
  for (const storage::RankState& rank : ranks) {
    if (rank.last_step >= 0) steps.push_back(rank.last_step);
  }
  if (!steps.empty()) {
    std::nth_element(steps.begin(), steps.begin() + (steps.size() - 1) / 2, steps.end());
    out.median_step = steps[(steps.size() - 1) / 2];
  }
  const bool run_finished = info->status == storage::RunStatus::kFinished;
  out.ranks.reserve(ranks.size());
  for (storage::RankState& rank : ranks) {
    RankRow row;
    row.steps_per_second = RecentStepsPerSecond(engine_, run, rank);
    row.lag = out.median_step >= 0 ? out.median_step - rank.last_step : 0;
    row.liveness = LivenessOf(rank, run_finished, now);
    row.state = std::move(rank);
    out.ranks.push_back(std::move(row));
  }
  return out;
}

}  // namespace trainwatch::query
