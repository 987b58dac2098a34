#include "detect/cadence.h"

#include <algorithm>

namespace trainwatch::detect {

bool Cadence::Observe(int64_t gap) {
  gap = std::max<int64_t>(1, gap);
  const bool switched = count_ > 0 && gap >= kSwitchMinSteps && gap >= kSwitchRatio * interval_;
  if (switched) count_ = next_ = 0;  // the old gaps describe another cadence
  gaps_[static_cast<size_t>(next_)] = gap;
  next_ = (next_ + 1) % kGaps;
  count_ = std::min(count_ + 1, kGaps);
  std::array<int64_t, kGaps> sorted = gaps_;
  std::nth_element(sorted.begin(), sorted.begin() + count_ / 2, sorted.begin() + count_);
  interval_ = sorted[static_cast<size_t>(count_ / 2)];
  return switched;
}

int64_t Cadence::RecordsFor(int64_t steps, int64_t min_records) const {
  int64_t records = (steps + interval_ - 1) / interval_;
  return std::clamp<int64_t>(records, min_records, std::max(steps, min_records));
}

}  // namespace trainwatch::detect
