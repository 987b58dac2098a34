// Exact min/max downsampling (M4): a series reduced to N buckets on a grid, each bucket holding the
// exact count, min, max, first and last of the points that fall in it — a chart drawn from the
// buckets is pixel-identical to one drawn from every point, and a single-point spike always shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "storage/block_summary.h"
#include "storage/encoding/point.h"

namespace trainwatch::query {

using storage::BlockSummary;
using storage::Point;
using storage::Summary;

// What a chart's x is: the step, the wall time, or the time since the run started.
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
  // Folds in a chunk summary whose points all fall in this bucket, in any order relative to what
  // the bucket holds already. The summary's min_time/max_time stand in for first/last time.
  void AddSummary(const Summary& s);
  // Folds in the bucket of the same index over other points of the same grid (another part of the
  // series, from another querier): counts and sums add, min of mins, max of maxes, first from the
  // lower first_step, last from the higher last_step. Exact, whatever the order of merging.
  void Merge(const Bucket& other);
};

// Accumulates buckets for one series; points and summaries may come in any order.
class Downsampler {
 public:
  Downsampler(const BucketGrid& grid, XAxis axis, double time_origin)
      : grid_(grid),
        width_(grid.Width()),
        axis_(axis),
        time_origin_(time_origin),
        buckets_(grid.count) {}

  // x of a point on this axis.
  double XOf(const Point& p) const {
    switch (axis_) {
      case XAxis::kStep:
        return static_cast<double>(p.step);
      case XAxis::kWallTime:
        return p.time;
      case XAxis::kRelativeTime:
        return p.time - time_origin_;
    }
    return 0;
  }
  void AddPoint(const Point& p);
  // Adds points in increasing step order on the step axis, as AddPoint would, without a division
  // per point: bucket boundaries are crossed in order.
  // `base` and `blocks` as for Bucket::AddOrderedRun (both null: no blocks).
  void AddStepOrdered(const Point* begin, const Point* end, const Point* base = nullptr,
                      const BlockSummary* blocks = nullptr);
  // True if the summary fell entirely into one bucket and was folded in; false means the caller
  // must add the points one by one.
  bool TryAddSummary(const Summary& s);
  // False if no point a summary covers can fall on the grid (the chunk need not be read).
  bool MayOverlap(const Summary& s) const;
  // The non-empty buckets, by index.
  std::vector<Bucket> Finish() const;

 private:
  // The x range the points of a summary span on this axis.
  void XRangeOf(const Summary& s, double* lo, double* hi) const;

  const BucketGrid grid_;
  const double width_;  // grid_.Width(), cached
  const XAxis axis_;
  const double time_origin_;
  std::vector<Bucket> buckets_;
};

}  // namespace trainwatch::query
