// Mutex and MutexLock: std::mutex and std::unique_lock with Clang's capability attributes, so that
// -Wthread-safety checks the TW_GUARDED_BY / TW_REQUIRES annotations (common/thread_annotations.h).
//
//   mutable Mutex mu_;
//   std::deque<Job> queue_ TW_GUARDED_BY(mu_);
//   std::condition_variable cv_;
//
//   MutexLock lock(mu_);
//   cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return !queue_.empty(); });
//
// Condition variables stay std::condition_variable: a wait takes the MutexLock's native()
// std::unique_lock, as does Clock::WaitUntil. The mutex is released inside the wait and held again
// on return, which is all the analysis needs to know. A predicate lambda is analysed on its own,
// as a function that knows of no lock: annotate it TW_REQUIRES(mu_) (it is called with mu_ held).
#pragma once

#include <mutex>

#include "common/thread_annotations.h"

namespace trainwatch {

// A non-recursive mutex. Thread-safe.
class TW_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() TW_ACQUIRE() { mu_.lock(); }
  void Unlock() TW_RELEASE() { mu_.unlock(); }
  [[nodiscard]] bool TryLock() TW_TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // Tells the analysis that the calling thread holds this mutex where it cannot see it (a callback
  // documented to run under it). Checks nothing at run time: std::mutex does not know its owner.
  void AssertHeld() const TW_ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex from construction to destruction; Unlock and Lock let go of it and take it again
// in between (the destructor releases it only if held). Not thread-safe: one thread's object.
class TW_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) TW_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() TW_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() TW_RELEASE() { lock_.unlock(); }
  void Lock() TW_ACQUIRE() { lock_.lock(); }

  // The lock as std::unique_lock, for std::condition_variable and Clock::WaitUntil. Whoever takes
  // it returns with the mutex held again; unlocking it directly hides that from the analysis.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace trainwatch
