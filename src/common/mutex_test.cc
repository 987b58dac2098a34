#include "common/mutex.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <thread>

#include "common/clock.h"

namespace trainwatch {
namespace {

// Whether another thread can take `mu` now (it lets go at once if so).
bool FreeForAnotherThread(Mutex& mu) {
  bool taken = false;
  std::thread other([&] {
    if (mu.TryLock()) {
      taken = true;
      mu.Unlock();
    }
  });
  other.join();
  return taken;
}

TEST(MutexTest, LockAndUnlock) {
  Mutex mu;
  mu.Lock();
  EXPECT_FALSE(FreeForAnotherThread(mu));
  mu.Unlock();
  EXPECT_TRUE(FreeForAnotherThread(mu));
}

TEST(MutexTest, TryLockFailsWhileHeld) {
  Mutex mu;
  if (mu.TryLock()) {
    EXPECT_FALSE(FreeForAnotherThread(mu));
    mu.Unlock();
  } else {
    ADD_FAILURE() << "TryLock failed on a free mutex";
  }
}

TEST(MutexLockTest, HoldsForItsScope) {
  Mutex mu;
  {
    MutexLock lock(mu);
    EXPECT_FALSE(FreeForAnotherThread(mu));
  }
  EXPECT_TRUE(FreeForAnotherThread(mu));
}

TEST(MutexLockTest, UnlockAndLockAgainInItsScope) {
  Mutex mu;
  {
    MutexLock lock(mu);
    lock.Unlock();
    EXPECT_TRUE(FreeForAnotherThread(mu));
    lock.Lock();
    EXPECT_FALSE(FreeForAnotherThread(mu));
    lock.Unlock();
  }  // released once, not twice
  EXPECT_TRUE(FreeForAnotherThread(mu));
}

// The usual shape: state guarded by a Mutex, a condition variable waited on through native().
class Mailbox {
 public:
  void Put(int v) {
    {
      MutexLock lock(mu_);
      value_ = v;
    }
    cv_.notify_all();
  }
  int Take() {
    MutexLock lock(mu_);
    cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return value_ != 0; });
    EXPECT_FALSE(FreeForAnotherThread(mu_));  // held again after the wait
    return value_;
  }
  // Waits on `clock` until a value is there or `seconds` passed; 0 when none came.
  int TakeWithin(const Clock& clock, double seconds) {
    MutexLock lock(mu_);
    clock.WaitFor(lock.native(), cv_, seconds, [&]() TW_REQUIRES(mu_) { return value_ != 0; });
    return value_;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  int value_ TW_GUARDED_BY(mu_) = 0;
};

TEST(MutexLockTest, WaitsOnAConditionVariable) {
  Mailbox box;
  int got = 0;
  std::thread taker([&] { got = box.Take(); });
  box.Put(7);
  taker.join();
  EXPECT_EQ(got, 7);
}

TEST(MutexLockTest, WaitsOnAClock) {
  ManualClock clock;
  Mailbox box;
  int got = -1;
  std::thread taker([&] { got = box.TakeWithin(clock, 10); });
  clock.AwaitWaiters(1);
  clock.Advance(10);
  taker.join();
  EXPECT_EQ(got, 0);  // the deadline passed with nothing put
  std::thread second([&] { got = box.TakeWithin(clock, 10); });
  clock.AwaitWaiters(1);
  box.Put(3);
  second.join();
  EXPECT_EQ(got, 3);
}

// Whether another thread can take `mu` now, exclusively or shared (it lets go at once if so).
bool WriterFreeForAnotherThread(SharedMutex& mu) {
  bool taken = false;
  std::thread other([&] {
    if (mu.TryLock()) {
      taken = true;
      mu.Unlock();
    }
  });
  other.join();
  return taken;
}
bool ReaderFreeForAnotherThread(SharedMutex& mu) {
  bool taken = false;
  std::thread other([&] {
    if (mu.TryLockShared()) {
      taken = true;
      mu.UnlockShared();
    }
  });
  other.join();
  return taken;
}

TEST(SharedMutexTest, ReadersShareAWriterExcludes) {
  SharedMutex mu;
  {
    ReaderMutexLock reader(mu);
    EXPECT_TRUE(ReaderFreeForAnotherThread(mu));
    EXPECT_FALSE(WriterFreeForAnotherThread(mu));
  }
  {
    WriterMutexLock writer(mu);
    EXPECT_FALSE(ReaderFreeForAnotherThread(mu));
    EXPECT_FALSE(WriterFreeForAnotherThread(mu));
  }
  EXPECT_TRUE(WriterFreeForAnotherThread(mu));
}

// The usual shape: readers under ReaderMutexLock call TW_REQUIRES_SHARED helpers.
class Table {
 public:
  void Set(int v) {
    WriterMutexLock lock(mu_);
    value_ = v;
  }
  int Get() const {
    ReaderMutexLock lock(mu_);
    return GetLocked();
  }

 private:
  int GetLocked() const TW_REQUIRES_SHARED(mu_) { return value_; }
  mutable SharedMutex mu_;
  int value_ TW_GUARDED_BY(mu_) = 0;
};

TEST(SharedMutexTest, GuardsState) {
  Table table;
  table.Set(4);
  EXPECT_EQ(table.Get(), 4);
}

}  // namespace
}  // namespace trainwatch
