#include "common/clock.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace trainwatch {

bool Clock::WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, double seconds,
                    const std::function<bool()>& done) const {
  return WaitUntil(lock, cv, DeadlineIn(seconds), done);
}

int64_t Clock::DeadlineIn(double seconds) const {
  const int64_t now = MonotonicNanos();
  const double nanos = std::max(0.0, seconds) * 1e9;
  if (nanos >= static_cast<double>(kNever - now)) return kNever;
  return now + static_cast<int64_t>(nanos);
}

double SystemClock::NowUnixSeconds() const {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

int64_t SystemClock::MonotonicNanos() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool SystemClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            int64_t deadline_nanos, const std::function<bool()>& done) const {
  if (deadline_nanos == kNever) {
    cv.wait(lock, done);
    return true;
  }
  const std::chrono::steady_clock::time_point deadline{std::chrono::nanoseconds(deadline_nanos)};
  return cv.wait_until(lock, deadline, done);
}

// Protocol: a waiter registers and reads the time with its own mutex held, and stays registered
// until it leaves WaitUntil. Advance moves the time, then takes each waiter's mutex to notify it,
// so a waiter either saw the new time or is already in cv.wait when notified: no lost wake-up.
// Advance pins the waiters it is about to notify; a pinned waiter unregisters only after its
// mutex was released to let Advance through (its mutex and cv may be gone after it leaves).
bool ManualClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            int64_t deadline_nanos, const std::function<bool()>& done) const {
  Waiter me{lock.mutex(), &cv};
  {
    MutexLock guard(mu_);
    waiters_.push_back(&me);
  }
  for (;;) {
    if (done()) break;
    {
      MutexLock guard(mu_);
      if (MonotonicNanos() >= deadline_nanos) break;
      me.seen_advance = advances_;
      me.blocked = true;
    }
    changed_.notify_all();
    cv.wait(lock);
    MutexLock guard(mu_);
    me.blocked = false;
  }
  Unregister(lock, me);
  return done();
}

void ManualClock::Unregister(std::unique_lock<std::mutex>& lock, Waiter& w) const {
  MutexLock guard(mu_);
  if (w.pins > 0) {
    guard.Unlock();
    lock.unlock();  // let the pinning Advance take it
    guard.Lock();
    changed_.wait(guard.native(), [&] { return w.pins == 0; });
    waiters_.remove(&w);
    guard.Unlock();
    lock.lock();
  } else {
    waiters_.remove(&w);
    guard.Unlock();
  }
  changed_.notify_all();
}

void ManualClock::Advance(double seconds) {
  std::vector<Waiter*> pinned;
  {
    MutexLock guard(mu_);
    micros_ += ToMicros(seconds);
    ++advances_;
    for (Waiter* w : waiters_) {
      ++w->pins;
      pinned.push_back(w);
    }
  }
  for (Waiter* w : pinned) {
    std::lock_guard waiter_lock(*w->mutex);
    w->cv->notify_all();
  }
  {
    MutexLock guard(mu_);
    for (Waiter* w : pinned) --w->pins;
  }
  changed_.notify_all();
}

void ManualClock::AwaitWaiters(size_t n) const {
  MutexLock guard(mu_);
  changed_.wait(guard.native(), [&]() TW_REQUIRES(mu_) {
    size_t settled = 0;
    for (const Waiter* w : waiters_) settled += Settled(*w) ? 1 : 0;
    return settled >= n;
  });
}

}  // namespace trainwatch
