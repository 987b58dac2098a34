// Time, injected: production code reads a Clock it was given, tests hand in a ManualClock.
#pragma once

#include <atomic>
#include <cstdint>

namespace trainwatch {

// Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, unix seconds.
  virtual double NowUnixSeconds() const = 0;
  // Monotonic nanoseconds, for durations only.
  virtual int64_t MonotonicNanos() const = 0;
};

class SystemClock final : public Clock {
 public:
  double NowUnixSeconds() const override;
  int64_t MonotonicNanos() const override;
};

// A clock that moves only when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(double unix_seconds = 1767225600.0) : micros_(ToMicros(unix_seconds)) {}
  double NowUnixSeconds() const override { return micros_.load() / 1e6; }
  int64_t MonotonicNanos() const override { return micros_.load() * 1000; }
  void Advance(double seconds) { micros_ += ToMicros(seconds); }

 private:
  static int64_t ToMicros(double s) { return static_cast<int64_t>(s * 1e6); }
  std::atomic<int64_t> micros_;
};

}  // namespace trainwatch
