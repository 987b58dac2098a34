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
  ring_[next_] = x;
  next_ = (next_ + 1) % capacity_;
  size_ = std::min(size_ + 1, capacity_);
  fresh_ = false;
}

void RobustWindow::Refresh() const {
  if (fresh_) return;
  fresh_ = true;
  if (size_ == 0) {
    median_ = sigma_ = 0;
    return;
  }
  std::copy(ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(size_), scratch_.begin());
  median_ = MedianInPlace(scratch_.data(), size_);
  if (size_ < 3) {
    sigma_ = 0;
    return;
  }
  // Consecutive differences in push order: the oldest value is at next_ once the ring is full.
  const size_t first = size_ == capacity_ ? next_ : 0;
  for (size_t i = 1; i < size_; ++i) {
    scratch_[i - 1] = std::abs(ring_[(first + i) % capacity_] - ring_[(first + i - 1) % capacity_]);
  }
  sigma_ = 1.4826 / std::sqrt(2.0) * MedianInPlace(scratch_.data(), size_ - 1);
}

double RobustWindow::Median() const {
  Refresh();
  return median_;
}

double RobustWindow::Sigma() const {
  Refresh();
  return sigma_;
}

}  // namespace trainwatch::detect
