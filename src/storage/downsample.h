// Exact min/max downsampling (M4): a series reduced to N buckets on a grid, each bucket holding the
// exact count, min, max, first and last of the points that fall in it — a chart drawn from the
// buckets is pixel-identical to one drawn from every point, and a single-point spike always shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "storage/point.h"

namespace trainwatch::storage {

enum class XAxis { kStep, kWallTime, kRelativeTime };

// `count` equal buckets over [from, to]; bucket i covers [from + i*w, from + (i+1)*w) with
// w = (to - from) / count, and the last bucket also holds x == to. Points outside are ignored.
// Runs compared in one chart share one grid, so their buckets line up.
struct BucketGrid {
  double from = 0;
  double to = 0;
  uint32_t count = 1;

  // The bucket of x, or -1 when x is outside [from, to].
  int64_t IndexOf(double x) const;
  double Width() const { return (to - from) / count; }
};

// Aggregates of kBlockPoints consecutive points of a chunk (the last block may be shorter): a run of
// points cut out of a chunk by bucket boundaries is folded block by block, scanning only its ends.
inline constexpr size_t kBlockPoints = 32;
struct BlockSummary {
  double min = 0;
  double max = 0;
  double sum = 0;        // finite values
  uint32_t nan_count = 0;
};
// The blocks of `points`, block i covering points [i * kBlockPoints, (i + 1) * kBlockPoints).
std::vector<BlockSummary> SummarizeBlocks(const std::vector<Point>& points);

// One bucket's aggregates. NaN values are counted in nan_count and take no part in min/max/sum.
// `first`/`last` are the values at the lowest and highest step in the bucket.
struct Bucket {
  uint32_t index = 0;
  uint64_t count = 0;
  uint64_t nan_count = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  double first = 0, last = 0;
  int64_t first_step = std::numeric_limits<int64_t>::max();
  int64_t last_step = std::numeric_limits<int64_t>::min();
  double first_time = 0, last_time = 0;

  void AddPoint(const Point& p);
  // Adds points [begin, end), in increasing step order, all of which fall in this bucket. With
  // `blocks` (SummarizeBlocks of the array starting at `base`), whole blocks are folded at once.
  void AddOrderedRun(const Point* begin, const Point* end, const Point* base = nullptr,
                     const BlockSummary* blocks = nullptr);
  // Folds in a chunk summary whose points all fall in this bucket, in any order relative to what the
  // bucket holds already. The summary's min_time/max_time stand in for first/last time.
  void AddSummary(const Summary& s);
};

// Accumulates buckets for one series; points and summaries may come in any order.
class Downsampler {
 public:
  Downsampler(const BucketGrid& grid, XAxis axis, double time_origin)
      : grid_(grid), width_(grid.Width()), axis_(axis), time_origin_(time_origin), buckets_(grid.count) {}

  // x of a point on this axis.
  double XOf(const Point& p) const {
    switch (axis_) {
      case XAxis::kStep: return static_cast<double>(p.step);
      case XAxis::kWallTime: return p.time;
      case XAxis::kRelativeTime: return p.time - time_origin_;
    }
    return 0;
  }
  void AddPoint(const Point& p);
  // Adds points in increasing step order on the step axis, as AddPoint would, without a division
  // per point: bucket boundaries are crossed in order.
  // `base` and `blocks` as for Bucket::AddOrderedRun (both null: no blocks).
  void AddStepOrdered(const Point* begin, const Point* end, const Point* base = nullptr,
                      const BlockSummary* blocks = nullptr);
  // True if the summary (of points whose x lies in [x_lo, x_hi]) fell entirely into one bucket and
  // was folded in; false means the caller must add the points one by one.
  bool TryAddSummary(const Summary& s);
  // The non-empty buckets, by index.
  std::vector<Bucket> Finish() const;

 private:
  const BucketGrid grid_;
  const double width_;  // grid_.Width(), cached
  const XAxis axis_;
  const double time_origin_;
  std::vector<Bucket> buckets_;
};

}  // namespace trainwatch::storage
