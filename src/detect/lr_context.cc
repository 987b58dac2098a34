#include "detect/lr_context.h"

#include <algorithm>

namespace trainwatch::detect {

LrContext::Event LrContext::Observe(int64_t step, double lr, int64_t records, const ShockBaselines& b) {
  Event event = Event::kNone;
  if (lr_prev_) {
    double prev = *lr_prev_;
    if (records > options_.shock_min_records && lr > options_.shock_ratio * lr_max_ && !shock_) {
      shock_ = Shock{step, b.gn0, b.lo0, b.dif0, b.ready};
      event = Event::kShockOpened;
    } else if (lr > options_.restart_jump * prev && lr <= options_.restart_known * lr_max_) {
      event = Event::kWarmRestart;  // a cyclic jump back to a known lr: a loss bump is expected
    }
    if (prev > 0 && lr < prev / options_.lr_drop_ratio) {
      lr_dropped_ = true;  // a one-record drop: a step function, not a decay
    } else if (lr > lr_max_ / options_.lr_drop_ratio) {
      lr_dropped_ = false;
    }
  }
  lr_max_ = std::max(lr_max_, lr);
  lr_prev_ = lr;
  return event;
}

}  // namespace trainwatch::detect
