#include "query/rank_query.h"

#include <algorithm>

namespace trainwatch::query {

std::string_view RankLivenessName(RankLiveness liveness) {
  switch (liveness) {
    case RankLiveness::kRunning:
      return "running";
    case RankLiveness::kDead:
      return "dead";
    case RankLiveness::kFinished:
      return "finished";
  }
  return "running";
}

RankLiveness LivenessOf(const storage::RankState& rank, bool run_finished, double now) {
  if (rank.finished || run_finished) return RankLiveness::kFinished;
  if (rank.heartbeat_interval > 0 && rank.last_heartbeat > 0 &&
      now - rank.last_heartbeat > 3 * rank.heartbeat_interval) {
    return RankLiveness::kDead;
  }
  return RankLiveness::kRunning;
}

namespace {

// The value at position `pos` between sorted neighbours `lo` and `hi` (numpy's linear method).
double Interpolate(double lo, double hi, double frac) {
  if (frac == 0 || lo == hi) return lo;
  return lo + (hi - lo) * frac;
}

// The q-quantiles of `values` for increasing `qs`, each exactly as Quantile gives it on the sorted
// values, by selection (std::nth_element) in linear time instead of a sort. Reorders `values`.
template <size_t N>
void SelectQuantiles(std::vector<double>& values, const double (&qs)[N], double (&out)[N]) {
  const auto first = values.begin();
  const size_t n = values.size();
  size_t sorted_to = 0;  // values[0, sorted_to) are the smallest, in place, in order
  for (size_t k = 0; k < N; ++k) {
    const double pos = qs[k] * static_cast<double>(n - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, n - 1);
    if (lo >= sorted_to) {
      // Everything before sorted_to is ≤ the rest, so the search needs only the rest.
      std::nth_element(first + static_cast<ptrdiff_t>(sorted_to),
                       first + static_cast<ptrdiff_t>(lo), values.end());
      sorted_to = lo + 1;
    }
    double hi_value = values[lo];
    if (hi != lo) {
      // The next order statistic: the least of what follows (all ≥ values[lo]), moved into place.
      auto least = std::min_element(first + static_cast<ptrdiff_t>(hi), values.end());
      std::iter_swap(first + static_cast<ptrdiff_t>(hi), least);
      sorted_to = hi + 1;
      hi_value = values[hi];
    }
    out[k] = Interpolate(values[lo], hi_value, pos - static_cast<double>(lo));
  }
}

}  // namespace

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return NAN;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return Interpolate(sorted[lo], sorted[hi], pos - static_cast<double>(lo));
}

void RankAggregator::AddRun(uint32_t rank, size_t index, const storage::Point* begin,
                            const storage::Point* end) {
  if (begin == end) return;
  Cell& cell = cells_[index];
  RankBucket& b = cell.bucket;
  if (b.count == 0) {
    b.first_step = begin->step;
    b.last_step = (end - 1)->step;
  } else {
    b.first_step = std::min(b.first_step, begin->step);
    b.last_step = std::max(b.last_step, (end - 1)->step);
  }
  b.count += static_cast<uint64_t>(end - begin);
  if (cell.last_rank != rank) {
    ++b.ranks;  // a rank's points come together
    cell.last_rank = rank;
  }
  // Locals, so that the stores into `values` need not be assumed to change them.
  bool any = !cell.values.empty();
  double min = b.min, max = b.max, sum = cell.finite_sum;
  uint32_t min_rank = b.min_rank, max_rank = b.max_rank;
  uint64_t nan_count = 0, finite_count = 0;
  for (const storage::Point* p = begin; p != end; ++p) {
    const double v = p->value;
    if (std::isnan(v)) {
      ++nan_count;
      continue;
    }
    if (!any || v < min || (v == min && rank < min_rank)) {
      min = v;
      min_rank = rank;
    }
    if (!any || v > max || (v == max && rank < max_rank)) {
      max = v;
      max_rank = rank;
    }
    any = true;
    if (std::isfinite(v)) {
      sum += v;
      ++finite_count;
    }
    cell.values.push_back(v);
  }
  b.min = min;
  b.max = max;
  b.min_rank = min_rank;
  b.max_rank = max_rank;
  b.nan_count += nan_count;
  cell.finite_sum = sum;
  cell.finite_count += finite_count;
}

void RankAggregator::Add(uint32_t rank, const storage::Point* begin, const storage::Point* end) {
  for (const storage::Point* p = begin; p != end; ++p) {
    const int64_t i = grid_.IndexOf(static_cast<double>(p->step));
    if (i >= 0) AddRun(rank, static_cast<size_t>(i), p, p + 1);
  }
}

void RankAggregator::AddStepOrdered(uint32_t rank, const storage::Point* begin,
                                    const storage::Point* end) {
  const storage::Point* p = begin;
  while (p != end) {
    const double x = static_cast<double>(p->step);
    const int64_t b = grid_.IndexOf(x);
    if (b < 0) {
      if (x > grid_.to) return;  // increasing: the rest is beyond the grid too
      ++p;
      continue;
    }
    const storage::Point* run = p;
    if (b + 1 == grid_.count) {  // the last bucket holds x == to
      while (p != end && static_cast<double>(p->step) <= grid_.to) ++p;
      AddRun(rank, static_cast<size_t>(b), run, p);
      return;
    }
    // Every x below `safe` is surely in bucket b (as in Downsampler::AddStepOrdered: a margin far
    // wider than IndexOf's rounding); a point in the margin takes IndexOf on the next round.
    const double boundary = grid_.from + static_cast<double>(b + 1) * width_;
    const double safe = boundary - 1e-9 * (std::abs(boundary) + width_);
    // A linear scan: a bucket holds few of a chunk's points on a fine grid, and it costs one
    // comparison per point where the points' folding costs several.
    ++p;
    while (p != end && static_cast<double>(p->step) < safe) ++p;
    AddRun(rank, static_cast<size_t>(b), run, p);
  }
}

std::vector<RankBucket> RankAggregator::Finish() {
  static constexpr double kQuantiles[] = {0.1, 0.5, 0.9};
  std::vector<RankBucket> out;
  for (size_t i = 0; i < cells_.size(); ++i) {
    Cell& cell = cells_[i];
    if (cell.bucket.count == 0) continue;
    RankBucket b = cell.bucket;
    b.index = static_cast<uint32_t>(i);
    if (cell.finite_count > 0) b.mean = cell.finite_sum / static_cast<double>(cell.finite_count);
    if (!cell.values.empty()) {
      double q[3];
      SelectQuantiles(cell.values, kQuantiles, q);
      b.p10 = q[0];
      b.median = q[1];
      b.p90 = q[2];
    }
    std::vector<double>().swap(cell.values);
    out.push_back(b);
  }
  return out;
}

}  // namespace trainwatch::query
