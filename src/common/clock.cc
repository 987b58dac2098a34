#include "common/clock.h"

#include <chrono>

namespace trainwatch {

double SystemClock::NowUnixSeconds() const {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

int64_t SystemClock::MonotonicNanos() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace trainwatch
