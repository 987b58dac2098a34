#include "detect/robust_window.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::detect {
namespace {

size_t Clamp(int64_t capacity) {
  return static_cast<size_t>(std::clamp<int64_t>(capacity, 1, static_cast<int64_t>(RobustWindow::kMaxCapacity)));
}

// The median of v[0, n), reordering it; n >= 1.
double MedianInPlace(double* v, size_t n) {
  double* mid = v + n / 2;
  std::nth_element(v, mid, v + n);
  double hi = *mid;
  if (n % 2 == 1) return hi;
  double lo = *std::max_element(v, mid);
  return (lo + hi) / 2;
}

}  // namespace

RobustWindow::RobustWindow(int64_t capacity) : capacity_(Clamp(capacity)) {}

void RobustWindow::SetCapacity(int64_t capacity) {
  size_t c = Clamp(capacity);
  if (c == capacity_) return;
  capacity_ = c;
  Clear();
}

void RobustWindow::Push(double x) {
  double* begin = sorted_.data();
  double* end = begin + size_;
  if (size_ == capacity_) {
    // Drop the value the ring overwrites from the sorted copy.
    double* old = std::lower_bound(begin, end, ring_[next_]);
    std::move(old + 1, end, old);
    --end;
  } else {
    ++size_;
  }
  double* at = std::upper_bound(begin, end, x);
  std::move_backward(at, end, end + 1);
  *at = x;
  ring_[next_] = x;
  next_ = (next_ + 1) % capacity_;
  sigma_fresh_ = false;
}

double RobustWindow::Median() const {
  if (size_ == 0) return 0;
  const size_t mid = size_ / 2;
  return size_ % 2 == 1 ? sorted_[mid] : (sorted_[mid - 1] + sorted_[mid]) / 2;
}

double RobustWindow::Spread() const {
  if (size_ < 3) return 0;
  const double med = Median();
  for (size_t i = 0; i < size_; ++i) scratch_[i] = std::abs(sorted_[i] - med);
  return 1.4826 * MedianInPlace(scratch_.data(), size_);
}

double RobustWindow::Sigma() const {
  if (sigma_fresh_) return sigma_;
  sigma_fresh_ = true;
  sigma_ = 0;
  if (size_ < 3) return sigma_;
  // Consecutive differences in push order: the oldest value is at next_ once the ring is full.
  const size_t first = size_ == capacity_ ? next_ : 0;
  const size_t n = size_ - 1;
  for (size_t i = 0; i < n; ++i) {
    scratch_[i] = ring_[(first + i + 1) % capacity_] - ring_[(first + i) % capacity_];
  }
  const double drift = MedianInPlace(scratch_.data(), n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    scratch_[i] = std::abs(scratch_[i] - drift);
    sum += scratch_[i];
  }
  // The larger of the median- and the mean-based estimate: minibatch losses are heavy-tailed, and
  // the median alone would call their ordinary 5x bumps 10-sigma events.
  sigma_ = std::max(1.4826 * MedianInPlace(scratch_.data(), n), 1.2533 * sum / static_cast<double>(n)) / std::sqrt(2.0);
  return sigma_;
}

}  // namespace trainwatch::detect
