// RobustWindow: the last N values of one series (N <= kMaxCapacity), their median and a robust
// noise sigma: the "robust statistics of the last ~20 logged values" that judge a record whatever
// the logging cadence (docs/detectors.md, common machinery). Fixed arrays, no allocation after
// construction. The values are also kept sorted (one binary search and a move of at most N values
// per Push), so the median is O(1); the sigma costs O(N log N) and is computed only when asked for,
// then cached until the next Push.
//
// Thread-safety: none; owned by one detector.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace trainwatch::detect {

class RobustWindow {
 public:
  static constexpr size_t kMaxCapacity = 64;

  // `capacity` is clamped to [1, kMaxCapacity].
  explicit RobustWindow(int64_t capacity);

  void Push(double x);
  void Clear() { size_ = next_ = 0; sigma_fresh_ = false; }
  void SetCapacity(int64_t capacity);

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  // The median of the values held, and the robust noise sigma: 1.4826 / sqrt(2) x the median
  // absolute deviation of the consecutive differences about their median (the drift), or the
  // mean-based estimate where that is larger (heavy tails); a trend (the fast early drop of a
  // loss, sampled every 500 steps) does not inflate it as it does the spread about the median.
  // 0 when fewer than 3 values.
  double Median() const;
  double Sigma() const;
  // 1.4826 x the median absolute deviation about the median: the spread of the values themselves,
  // which a trend inflates but which also holds slow wandering of the level.
  double Spread() const;

 private:
  std::array<double, kMaxCapacity> ring_{};
  std::array<double, kMaxCapacity> sorted_{};  // the same values, ascending
  size_t capacity_;
  size_t size_ = 0;
  size_t next_ = 0;
  // Sigma of the current contents, when computed (Spread reuses the scratch, uncached).
  mutable std::array<double, kMaxCapacity> scratch_{};
  mutable bool sigma_fresh_ = false;  // Spread() clobbers scratch_, never sigma_
  mutable double sigma_ = 0;
};

}  // namespace trainwatch::detect
