#include "query/export.h"

#include <algorithm>

namespace trainwatch::query {

ExportCursor::ExportCursor(const ExportPlan& plan) : next_(plan.first_step), last_(plan.last_step) {
  done_ = plan.metrics.empty() || plan.points == 0 || next_ > last_;
  if (done_) return;
  const double steps = static_cast<double>(last_) - static_cast<double>(next_) + 1;
  window_ = static_cast<int64_t>(
      std::clamp(kPointsPerWindow * steps / static_cast<double>(plan.points), 1.0, 0x1p62));
}

bool ExportCursor::Next(int64_t* from, int64_t* to) {
  if (done_) return false;
  // The distance as unsigned: exact over the whole int64 range (last_ >= next_ here).
  const uint64_t left = static_cast<uint64_t>(last_) - static_cast<uint64_t>(next_);
  *from = next_;
  *to = left < static_cast<uint64_t>(window_) ? last_ : next_ + (window_ - 1);
  if (*to == last_) {
    done_ = true;
  } else {
    next_ = *to + 1;
  }
  return true;
}

}  // namespace trainwatch::query
