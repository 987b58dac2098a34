#include "common/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

namespace trainwatch {
namespace {

// A background loop as the server writes them: waits on the clock for its interval or until
// stopped, and counts the times it woke for its timer.
class Ticker {
 public:
  Ticker(const Clock& clock, double interval) : clock_(clock), interval_(interval) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Ticker() {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  int ticks() {
    MutexLock lock(mu_);
    return ticks_;
  }

 private:
  void Loop() {
    MutexLock lock(mu_);
    while (
        !clock_.WaitFor(lock.native(), cv_, interval_, [&]() TW_REQUIRES(mu_) { return stop_; })) {
      ++ticks_;
    }
  }

  const Clock& clock_;
  const double interval_;
  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ TW_GUARDED_BY(mu_) = false;
  int ticks_ TW_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

TEST(ManualClockTest, AdvancePastTheDeadlineWakesTheWaiter) {
  ManualClock clock;
  Ticker ticker(clock, 10);
  clock.AwaitWaiters(1);
  EXPECT_EQ(ticker.ticks(), 0);
  clock.Advance(9.999);
  clock.AwaitWaiters(1);
  EXPECT_EQ(ticker.ticks(), 0);
  clock.Advance(0.001);
  clock.AwaitWaiters(1);
  EXPECT_EQ(ticker.ticks(), 1);
  clock.Advance(10);
  clock.AwaitWaiters(1);
  EXPECT_EQ(ticker.ticks(), 2);
}

TEST(ManualClockTest, OneLongAdvanceIsOneTimeout) {
  ManualClock clock;
  Ticker ticker(clock, 1);
  clock.AwaitWaiters(1);
  clock.Advance(100);  // like a process that was suspended: the loop wakes once, not 100 times
  clock.AwaitWaiters(1);
  EXPECT_EQ(ticker.ticks(), 1);
}

TEST(ManualClockTest, AwaitWaitersCountsEveryLoop) {
  ManualClock clock;
  Ticker a(clock, 1), b(clock, 2), c(clock, 3);
  clock.AwaitWaiters(3);
  clock.Advance(2);
  clock.AwaitWaiters(3);
  EXPECT_EQ(a.ticks(), 1);
  EXPECT_EQ(b.ticks(), 1);
  EXPECT_EQ(c.ticks(), 0);
  clock.Advance(1);
  clock.AwaitWaiters(3);
  EXPECT_EQ(a.ticks(), 2);
  EXPECT_EQ(b.ticks(), 1);
  EXPECT_EQ(c.ticks(), 1);
}

TEST(ManualClockTest, DoneReturnsAtOnceWithoutTimeMoving) {
  ManualClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  EXPECT_TRUE(clock.WaitUntil(lock, cv, Clock::kNever, [] { return true; }));
  EXPECT_FALSE(clock.WaitFor(lock, cv, 0, [] { return false; }));  // deadline already reached
  EXPECT_TRUE(lock.owns_lock());
}

// Waiters come and go (their mutex and condition variable with them) while another thread
// advances the clock: no wake-up is lost and Advance never touches a waiter that left.
TEST(ManualClockTest, WaitersLeavingWhileTimeAdvances) {
  ManualClock clock;
  std::atomic<bool> finished{false};
  std::thread advancer([&] {
    while (!finished) clock.Advance(0.001);
  });
  for (int i = 0; i < 200; ++i) {
    auto mu = std::make_unique<std::mutex>();
    auto cv = std::make_unique<std::condition_variable>();
    std::unique_lock lock(*mu);
    const int64_t deadline = clock.MonotonicNanos() + 1'000'000;  // 1 ms of simulated time
    bool done = clock.WaitUntil(lock, *cv, deadline, [] { return false; });
    EXPECT_FALSE(done);
    EXPECT_TRUE(lock.owns_lock());
    if (clock.MonotonicNanos() < deadline) {
      ADD_FAILURE() << "returned before the deadline";
      break;
    }
    lock.unlock();
    // `mu` and `cv` go now, as a loop's would when its object is destroyed.
  }
  finished = true;
  advancer.join();
}

TEST(SystemClockTest, WaitUntilAPassedDeadlineTimesOutAtOnce) {
  SystemClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  EXPECT_FALSE(clock.WaitUntil(lock, cv, clock.MonotonicNanos() - 1, [] { return false; }));
  EXPECT_TRUE(clock.WaitUntil(lock, cv, Clock::kNever, [] { return true; }));
  EXPECT_EQ(clock.DeadlineIn(1e300), Clock::kNever);
}

}  // namespace
}  // namespace trainwatch
