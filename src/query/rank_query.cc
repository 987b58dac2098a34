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

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return NAN;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  if (frac == 0 || sorted[lo] == sorted[hi]) return sorted[lo];
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

void RankAggregator::Add(uint32_t rank, const storage::Point* begin, const storage::Point* end) {
  for (const storage::Point* p = begin; p != end; ++p) {
    const int64_t i = grid_.IndexOf(static_cast<double>(p->step));
    if (i < 0) continue;
    Cell& cell = cells_[static_cast<size_t>(i)];
    RankBucket& b = cell.bucket;
    if (b.count == 0) {
      b.first_step = p->step;
      b.last_step = p->step;
    } else {
      b.first_step = std::min(b.first_step, p->step);
      b.last_step = std::max(b.last_step, p->step);
    }
    ++b.count;
    if (cell.last_rank != rank) {
      ++b.ranks;  // a rank's points come together (one Add per rank)
      cell.last_rank = rank;
    }
    const double v = p->value;
    if (std::isnan(v)) {
      ++b.nan_count;
      continue;
    }
    if (cell.values.empty() || v < b.min || (v == b.min && rank < b.min_rank)) {
      b.min = v;
      b.min_rank = rank;
    }
    if (cell.values.empty() || v > b.max || (v == b.max && rank < b.max_rank)) {
      b.max = v;
      b.max_rank = rank;
    }
    if (std::isfinite(v)) {
      cell.finite_sum += v;
      ++cell.finite_count;
    }
    cell.values.push_back(v);
  }
}

std::vector<RankBucket> RankAggregator::Finish() {
  std::vector<RankBucket> out;
  for (size_t i = 0; i < cells_.size(); ++i) {
    Cell& cell = cells_[i];
    if (cell.bucket.count == 0) continue;
    RankBucket b = cell.bucket;
    b.index = static_cast<uint32_t>(i);
    if (cell.finite_count > 0) b.mean = cell.finite_sum / static_cast<double>(cell.finite_count);
    if (!cell.values.empty()) {
      std::sort(cell.values.begin(), cell.values.end());
      b.p10 = Quantile(cell.values, 0.1);
      b.median = Quantile(cell.values, 0.5);
      b.p90 = Quantile(cell.values, 0.9);
    }
    std::vector<double>().swap(cell.values);
    out.push_back(b);
  }
  return out;
}

}  // namespace trainwatch::query
