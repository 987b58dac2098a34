// Distributed runs (docs/distributed.md): the ranks of one run's metric compared on one step grid —
// across-rank aggregates per bucket, the rank × bucket matrix — and the ranks table with each
// rank's progress. Plain values: no HTTP, no JSON. The aggregation itself (RankAggregator) is pure
// so that it can be checked against a brute-force computation.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "query/downsample.h"
#include "storage/encoding/point.h"
#include "storage/run_info.h"
#include "storage/series_key.h"

namespace trainwatch::query {

// One metric of one run, every rank, on `buckets` equal buckets of steps over [from, to] (±inf:
// the ranks' joint range).
struct RankRequest {
  storage::SeriesKey metric;  // rank ignored
  double from = -INFINITY;
  double to = INFINITY;
  uint32_t buckets = 1;
};

// The across-rank statistics of one bucket, over every rank's points in it. NaN values are
// counted (nan_count) and take no part in the rest; min and max include ±Inf, the mean only finite
// values (NaN when there is none), the percentiles every non-NaN value, interpolated linearly
// between the nearest ranks of the sorted values (numpy's default: position q × (n − 1)).
struct RankBucket {
  uint32_t index = 0;
  uint64_t count = 0;      // points, every rank together
  uint64_t nan_count = 0;  // of which NaN
  uint32_t ranks = 0;      // ranks with a point in the bucket
  int64_t first_step = 0;
  int64_t last_step = 0;
  // Over the non-NaN values; NaN (and the ranks 0) when every value is NaN.
  double min = NAN;
  double max = NAN;
  uint32_t min_rank = 0;  // the rank holding min (the lowest such rank on a tie)
  uint32_t max_rank = 0;
  double mean = NAN;
  double median = NAN;
  double p10 = NAN;
  double p90 = NAN;
};

struct RankAggregates {
  BucketGrid grid;
  uint32_t rank_count = 0;          // ranks that have the metric
  std::vector<RankBucket> buckets;  // the non-empty ones, by index
};

// One rank's row of the matrix: the rank's own buckets (count, min, max, sum; mean = sum / finite
// count), the non-empty ones by index. Their first_time/last_time are not set (0).
struct RankMatrixRow {
  uint32_t rank = 0;
  std::vector<Bucket> buckets;
};

struct RankMatrix {
  BucketGrid grid;
  std::vector<RankMatrixRow> rows;  // by rank
};

enum class RankLiveness { kRunning, kDead, kFinished };
std::string_view RankLivenessName(RankLiveness liveness);

// A row of the ranks table as the API shows it.
struct RankRow {
  storage::RankState state;
  double steps_per_second = 0;  // over the rank's recent steps (its last ~100 clock points)
  // Steps behind the median rank's last step (negative: ahead).
  int64_t lag = 0;
  RankLiveness liveness = RankLiveness::kRunning;
};

struct RankTable {
  uint32_t world_size = 0;
  int64_t median_step = -1;  // the median of the ranks' last steps (the lower middle one); -1: none
  std::vector<RankRow> ranks;  // by rank
};

// The status of a rank at `now` (server time): finished when it (or the whole run) finished; dead
// when it promised heartbeats and sent none for three intervals; else running.
RankLiveness LivenessOf(const storage::RankState& rank, bool run_finished, double now);

// The q-quantile (0..1) of sorted, non-empty `values`, linearly interpolated.
double Quantile(const std::vector<double>& sorted, double q);

// Collects every rank's points of one metric on a step grid and computes RankBuckets. Memory: one
// value (8 bytes) per point added, until Finish. Not thread-safe.
class RankAggregator {
 public:
  explicit RankAggregator(const BucketGrid& grid)
      : grid_(grid), width_(grid.Width()), cells_(grid.count) {}

  // Points of one rank, in any order; those outside the grid are ignored. All of a rank's points
  // come before the next rank's (one or more calls per rank).
  void Add(uint32_t rank, const storage::Point* begin, const storage::Point* end);
  // As Add, for points in increasing step order (a chunk's, the head's): the same result, with one
  // bucket lookup per bucket crossed instead of one per point.
  void AddStepOrdered(uint32_t rank, const storage::Point* begin, const storage::Point* end);
  // The non-empty buckets, by index. Selects each bucket's percentiles in linear time (no full
  // sort; the same values Quantile gives on the sorted values) and leaves the aggregator empty.
  std::vector<RankBucket> Finish();

 private:
  struct Cell {
    RankBucket bucket;
    std::vector<double> values;  // non-NaN
    double finite_sum = 0;
    uint64_t finite_count = 0;
    uint32_t last_rank = std::numeric_limits<uint32_t>::max();
  };
  // Folds points [begin, end) of `rank`, all in cell `index`, increasing in step.
  void AddRun(uint32_t rank, size_t index, const storage::Point* begin, const storage::Point* end);

  const BucketGrid grid_;
  const double width_;  // grid_.Width()
  std::vector<Cell> cells_;
};

}  // namespace trainwatch::query
