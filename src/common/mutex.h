// Mutex and MutexLock: std::mutex and std::unique_lock with Clang's capability attributes, so that
// -Wthread-safety checks the TW_GUARDED_BY / TW_REQUIRES annotations (common/thread_annotations.h).
// SharedMutex with ReaderMutexLock and WriterMutexLock: the same for std::shared_mutex, whose
// readers hold it shared (TW_REQUIRES_SHARED) and whose writer holds it exclusively.
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
#include <shared_mutex>

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

// A reader-writer mutex: many readers (LockShared) or one writer (Lock). Non-recursive; a reader
// cannot upgrade to a writer. Thread-safe.
class TW_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() TW_ACQUIRE() { mu_.lock(); }
  void Unlock() TW_RELEASE() { mu_.unlock(); }
  void LockShared() TW_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() TW_RELEASE_SHARED() { mu_.unlock_shared(); }
  [[nodiscard]] bool TryLock() TW_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  [[nodiscard]] bool TryLockShared() TW_TRY_ACQUIRE_SHARED(true) { return mu_.try_lock_shared(); }

  // As Mutex::AssertHeld: exclusively, or at least shared. Check nothing at run time.
  void AssertHeld() const TW_ASSERT_CAPABILITY(this) {}
  void AssertReaderHeld() const TW_ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex shared (as a reader) from construction to destruction. Not thread-safe.
class TW_SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) TW_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.LockShared(); }
  ~ReaderMutexLock() TW_RELEASE_GENERIC() { mu_.UnlockShared(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex exclusively (as the writer) from construction to destruction. Not
// thread-safe.
class TW_SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex& mu) TW_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~WriterMutexLock() TW_RELEASE() { mu_.Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace trainwatch
