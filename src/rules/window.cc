#include "rules/window.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace trainwatch::rules {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

size_t MetricWindow::Add(WindowFn fn, int64_t n) {
  assert(n >= 1 && n <= kMaxWindow);
  const bool sum_like = fn == WindowFn::kMean || fn == WindowFn::kSum;
  for (size_t i = 0; i < stats_.size(); ++i) {
    if (stats_[i].fn == fn && stats_[i].n == n) return i;
  }
  Stat stat{fn, n, 0};
  if (sum_like) {
    auto it = std::find_if(sums_.begin(), sums_.end(), [n](const SumState& s) { return s.n == n; });
    if (it == sums_.end()) {
      sums_.push_back(SumState{.n = n});
      it = sums_.end() - 1;
    }
    stat.state = static_cast<size_t>(it - sums_.begin());
  } else if (fn == WindowFn::kMax || fn == WindowFn::kMin) {
    extremes_.push_back(ExtremeState{.n = n, .is_max = fn == WindowFn::kMax, .q = {}});
    stat.state = extremes_.size() - 1;
  }
  capacity_ = std::max(capacity_, static_cast<size_t>(fn == WindowFn::kDelta ? n + 1 : n));
  stats_.push_back(stat);
  return stats_.size() - 1;
}

double MetricWindow::Back(size_t back) const {
  assert(back < ring_.size());
  if (ring_.size() < capacity_) return ring_[ring_.size() - 1 - back];
  // Full ring: the newest value sits just before head_.
  return ring_[(head_ + capacity_ - 1 - back) % capacity_];
}

void MetricWindow::AddToSum(SumState& s, double v, int sign) {
  if (std::isnan(v)) {
    s.nan += sign;
  } else if (std::isinf(v)) {
    (v > 0 ? s.pos_inf : s.neg_inf) += sign;
  } else {
    const double x = sign * v;
    const double t = s.sum + x;
    s.comp += std::fabs(s.sum) >= std::fabs(x) ? (s.sum - t) + x : (x - t) + s.sum;
    s.sum = t;
  }
}

void MetricWindow::RecomputeSum(SumState& s) {
  s.sum = s.comp = 0;
  s.nan = s.pos_inf = s.neg_inf = 0;
  const size_t count = std::min(held(), static_cast<size_t>(s.n));
  for (size_t i = 0; i < count; ++i) AddToSum(s, Back(i), +1);
  s.since_exact = 0;
}

void MetricWindow::Push(double v) {
  if (stats_.empty()) return;
  // Sums first: the value leaving each window is still in the ring.
  for (SumState& s : sums_) {
    if (pushed_ >= s.n) AddToSum(s, Back(static_cast<size_t>(s.n - 1)), -1);
    AddToSum(s, v, +1);
  }
  const int64_t seq = pushed_;
  for (ExtremeState& e : extremes_) {
    while (!e.q.empty() && e.q.front().first <= seq - e.n) e.q.pop_front();
    if (std::isnan(v)) continue;
    if (e.is_max) {
      while (!e.q.empty() && e.q.back().second <= v) e.q.pop_back();
    } else {
      while (!e.q.empty() && e.q.back().second >= v) e.q.pop_back();
    }
    e.q.emplace_back(seq, v);
  }
  if (ring_.size() < capacity_) {
    ring_.push_back(v);
  } else {
    ring_[head_] = v;
    head_ = (head_ + 1) % capacity_;
  }
  ++pushed_;
  for (SumState& s : sums_) {
    if (++s.since_exact >= s.n) RecomputeSum(s);
  }
}

double MetricWindow::SumOf(const SumState& s, bool mean) const {
  const int64_t count = std::min<int64_t>(pushed_, s.n) - s.nan;
  if (count <= 0) return kNaN;
  if (s.pos_inf > 0 && s.neg_inf > 0) return kNaN;
  if (s.pos_inf > 0) return std::numeric_limits<double>::infinity();
  if (s.neg_inf > 0) return -std::numeric_limits<double>::infinity();
  const double total = s.sum + s.comp;
  return mean ? total / static_cast<double>(count) : total;
}

double MetricWindow::Value(size_t handle) const {
  const Stat& stat = stats_[handle];
  switch (stat.fn) {
    case WindowFn::kMean:
    case WindowFn::kSum:
      return SumOf(sums_[stat.state], stat.fn == WindowFn::kMean);
    case WindowFn::kMax:
    case WindowFn::kMin: {
      const ExtremeState& e = extremes_[stat.state];
      return e.q.empty() ? kNaN : e.q.front().second;
    }
    case WindowFn::kDelta:
      if (pushed_ <= stat.n) return kNaN;
      return Back(0) - Back(static_cast<size_t>(stat.n));
  }
  return kNaN;
}

void MetricWindow::Clear() {
  ring_.clear();
  head_ = 0;
  pushed_ = 0;
  for (SumState& s : sums_) s = SumState{.n = s.n};
  for (ExtremeState& e : extremes_) e.q.clear();
}

void MetricWindow::CopyValuesFrom(const MetricWindow& from) {
  const size_t count = std::min(from.held(), capacity_);
  for (size_t i = count; i > 0; --i) Push(from.Back(i - 1));
}

}  // namespace trainwatch::rules
