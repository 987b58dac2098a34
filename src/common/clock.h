// Time, injected: production code reads a Clock it was given, tests hand in a ManualClock.
//
// Background loops never read std::chrono clocks or sleep: they wait through Clock::WaitUntil, so
// a test drives them with ManualClock::Advance and learns that they caught up with
// ManualClock::AwaitWaiters, without sleeping and without wall-clock bounds.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <list>
#include <mutex>

#include "common/mutex.h"

namespace trainwatch {

// Thread-safe.
class Clock {
 public:
  // A deadline that never comes: WaitUntil returns only once `done` holds.
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  virtual ~Clock() = default;
  // Wall-clock time, unix seconds.
  virtual double NowUnixSeconds() const = 0;
  // Monotonic nanoseconds, for durations only.
  virtual int64_t MonotonicNanos() const = 0;

  // Blocks on `cv` until `done()` holds or MonotonicNanos() reaches `deadline_nanos`, like
  // cv.wait_until(lock, deadline, done) on this clock's time. `lock` holds the mutex guarding what
  // `done` reads; whoever makes `done` true notifies `cv` (the usual condition-variable contract).
  // `done` is called with the lock held. Returns done(), evaluated with the lock held on return.
  virtual bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         int64_t deadline_nanos, const std::function<bool()>& done) const = 0;
  // The same, `seconds` from now.
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, double seconds,
               const std::function<bool()>& done) const;
  // MonotonicNanos() `seconds` from now, saturating at kNever.
  int64_t DeadlineIn(double seconds) const;
};

class SystemClock final : public Clock {
 public:
  double NowUnixSeconds() const override;
  int64_t MonotonicNanos() const override;
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 int64_t deadline_nanos, const std::function<bool()>& done) const override;
};

// A clock that moves only when told to. Waiters in WaitUntil wake when Advance passes their
// deadline. Thread-safe; Advance must not be called with a mutex held that a waiter waits with.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(double unix_seconds = 1767225600.0) : micros_(ToMicros(unix_seconds)) {}
  ManualClock(const ManualClock&) = delete;
  ManualClock& operator=(const ManualClock&) = delete;

  double NowUnixSeconds() const override { return micros_.load() / 1e6; }
  int64_t MonotonicNanos() const override { return micros_.load() * 1000; }
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 int64_t deadline_nanos, const std::function<bool()>& done) const override;

  // Moves time forward by `seconds` (0 is allowed) and wakes every waiter, so each looks at the
  // new time; those still waiting count for AwaitWaiters only once they looked.
  void Advance(double seconds);

  // Blocks until at least `n` threads wait in WaitUntil having looked at their condition and
  // the time since the last Advance: the background loops on this clock have done what the
  // current time asks of them and are idle. A thread busy elsewhere (a send, a write) is not
  // counted until it is back in WaitUntil. Event-bound: no timeout.
  void AwaitWaiters(size_t n) const;

 private:
  struct Waiter {
    std::mutex* mutex;
    std::condition_variable* cv;
    uint64_t seen_advance = 0;  // the Advance it last looked after
    bool blocked = false;       // in cv.wait
    int pins = 0;               // Advance calls about to notify it
  };
  static int64_t ToMicros(double s) { return static_cast<int64_t>(s * 1e6); }
  bool Settled(const Waiter& w) const TW_REQUIRES(mu_) {
    return w.blocked && w.seen_advance == advances_;
  }
  void Unregister(std::unique_lock<std::mutex>& lock, Waiter& w) const TW_EXCLUDES(mu_);

  std::atomic<int64_t> micros_;
  mutable Mutex mu_;  // taken after a waiter's mutex; also guards each Waiter's fields
  mutable std::condition_variable changed_;  // a waiter settled, left or was unpinned
  mutable std::list<Waiter*> waiters_ TW_GUARDED_BY(mu_);
  uint64_t advances_ TW_GUARDED_BY(mu_) = 0;
};

}  // namespace trainwatch
