// MpmcQueue: a bounded, lock-free, multi-producer multi-consumer queue of trivially copyable
// values (Dmitry Vyukov's bounded queue: one sequence number per cell, producers and consumers
// claim cells with a compare-and-swap on their own position counter).
//
// TryPush and TryPop never block and never allocate; each costs one CAS when uncontended. The
// SDK's hot path (Run::Log) pushes; the batcher pops; a producer that finds the queue full may pop
// the oldest cell itself to make room (the drop-oldest policy).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

namespace trainwatch::sdk {

template <typename T>
class MpmcQueue {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  // `capacity` is rounded up to a power of two (at least 2).
  explicit MpmcQueue(size_t capacity) {
    size_t n = 2;
    while (n < capacity) n <<= 1;
    mask_ = n - 1;
    cells_ = std::make_unique<Cell[]>(n);
    for (size_t i = 0; i < n; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
  }
  MpmcQueue(const MpmcQueue&) = delete;
  MpmcQueue& operator=(const MpmcQueue&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // False if the queue is full.
  bool TryPush(const T& value) {
    size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      size_t seq = cell.sequence.load(std::memory_order_acquire);
      intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (diff == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.value = value;
          cell.sequence.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  // False if the queue is empty.
  bool TryPop(T* out) {
    size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      size_t seq = cell.sequence.load(std::memory_order_acquire);
      intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (diff == 0) {
        if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          *out = cell.value;
          cell.sequence.store(pos + mask_ + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;
      } else {
        pos = dequeue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  // Approximate number of queued values (exact when no push or pop is under way).
  size_t SizeApprox() const {
    size_t tail = enqueue_pos_.load(std::memory_order_relaxed);
    size_t head = dequeue_pos_.load(std::memory_order_relaxed);
    return tail >= head ? tail - head : 0;
  }

 private:
  struct Cell {
    std::atomic<size_t> sequence;
    T value;
  };
  static constexpr size_t kLine = 64;  // keeps producers' and consumers' counters on separate lines

  std::unique_ptr<Cell[]> cells_;
  size_t mask_ = 0;
  alignas(kLine) std::atomic<size_t> enqueue_pos_{0};
  alignas(kLine) std::atomic<size_t> dequeue_pos_{0};
};

}  // namespace trainwatch::sdk
