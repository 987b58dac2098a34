// Clang's thread-safety annotations, so that the compiler checks who holds which lock
// (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html). Under clang they expand to attributes
// that -Wthread-safety checks (scripts/check_thread_safety.sh builds with it); under GCC to
// nothing.
//
//   Mutex mu_;
//   int count_ TW_GUARDED_BY(mu_);
//   void Bump() TW_REQUIRES(mu_);    // the caller holds mu_
//   void Flush() TW_EXCLUDES(mu_);   // takes mu_ itself: the caller must not hold it
//   int Peek() const TW_REQUIRES_SHARED(mu_);  // the caller holds mu_, at least shared
//
// Annotate with Mutex and MutexLock, or SharedMutex with ReaderMutexLock and WriterMutexLock
// (common/mutex.h): std::mutex and std::shared_mutex carry no capability attributes, so the
// analysis does not see a std::lock_guard or std::shared_lock take them.
#pragma once

#if defined(__clang__)
#define TW_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TW_THREAD_ANNOTATION(x)
#endif

// On a class: its instances are capabilities (locks) named `x` in warnings.
#define TW_CAPABILITY(x) TW_THREAD_ANNOTATION(capability(x))
// On a class: an RAII object that holds a capability for its lifetime.
#define TW_SCOPED_CAPABILITY TW_THREAD_ANNOTATION(scoped_lockable)

// On a member: read and written only with `x` held.
#define TW_GUARDED_BY(x) TW_THREAD_ANNOTATION(guarded_by(x))
// On a pointer member: what it points to is read and written only with `x` held.
#define TW_PT_GUARDED_BY(x) TW_THREAD_ANNOTATION(pt_guarded_by(x))

// On a lock member: the order in which locks are taken (checked with -Wthread-safety-beta only).
#define TW_ACQUIRED_BEFORE(...) TW_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define TW_ACQUIRED_AFTER(...) TW_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))

// On a function: the caller holds the locks (exclusively, or at least shared).
#define TW_REQUIRES(...) TW_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define TW_REQUIRES_SHARED(...) TW_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// On a function: the caller must not hold the locks (the function takes them).
#define TW_EXCLUDES(...) TW_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// On a function: it takes, tries to take (holding them when it returns `ok`) or releases the locks
// (no argument: `this`, for the lock types themselves).
#define TW_ACQUIRE(...) TW_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define TW_TRY_ACQUIRE(...) TW_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TW_RELEASE(...) TW_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// The same for a shared (reader) hold of a SharedMutex.
#define TW_ACQUIRE_SHARED(...) TW_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define TW_TRY_ACQUIRE_SHARED(...) TW_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
#define TW_RELEASE_SHARED(...) TW_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
// On a scoped lock's destructor: releases whatever it holds, exclusive or shared.
#define TW_RELEASE_GENERIC(...) TW_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))

// On a function: once it returns, the analysis takes the lock as held (it checks nothing itself).
#define TW_ASSERT_CAPABILITY(x) TW_THREAD_ANNOTATION(assert_capability(x))
#define TW_ASSERT_SHARED_CAPABILITY(x) TW_THREAD_ANNOTATION(assert_shared_capability(x))
// On a function: it returns a reference to the lock `x`.
#define TW_RETURN_CAPABILITY(x) TW_THREAD_ANNOTATION(lock_returned(x))

// On a function: not analysed. Only where the locking is right but beyond the analysis (say why).
#define TW_NO_THREAD_SAFETY_ANALYSIS TW_THREAD_ANNOTATION(no_thread_safety_analysis)
