#include "storage/series.h"

#include <algorithm>
#include <bit>
#include <cstddef>

namespace trainwatch::storage {

void Series::PublishLatest() {
  latest_seq_.fetch_add(1, std::memory_order_relaxed);  // odd: readers retry
  std::atomic_thread_fence(std::memory_order_release);
  published_has_.store(has_latest, std::memory_order_relaxed);
  published_step_.store(latest.step, std::memory_order_relaxed);
  published_time_bits_.store(std::bit_cast<uint64_t>(latest.time), std::memory_order_relaxed);
  published_value_bits_.store(std::bit_cast<uint64_t>(latest.value), std::memory_order_relaxed);
  latest_seq_.fetch_add(1, std::memory_order_release);
}

bool Series::ReadLatest(Point* out) const {
  for (;;) {
    uint64_t before = latest_seq_.load(std::memory_order_acquire);
    if (before & 1) continue;
    bool has = published_has_.load(std::memory_order_relaxed);
    Point p{published_step_.load(std::memory_order_relaxed),
            std::bit_cast<double>(published_time_bits_.load(std::memory_order_relaxed)),
            std::bit_cast<double>(published_value_bits_.load(std::memory_order_relaxed))};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (latest_seq_.load(std::memory_order_relaxed) != before) continue;
    if (has) *out = p;
    return has;
  }
}

void Series::InsertIntoHead(std::vector<Point>::iterator at, const Point& p) {
  if (head.size() == head.capacity()) {
    const size_t offset = static_cast<size_t>(at - head.begin());
    head.reserve(head.size() + std::max(kMinHeadGrowth, head.size() / 8));
    at = head.begin() + static_cast<std::ptrdiff_t>(offset);
  }
  head.insert(at, p);
}

void Series::ReserveHead(size_t more) {
  if (head.capacity() - head.size() >= more) return;
  head.reserve(head.size() + std::max({more, kMinHeadGrowth, head.size() / 8}));
}

void Series::RewindAt(int64_t step) {
  auto first_hidden = std::lower_bound(head.begin(), head.end(), step,
                                       [](const Point& p, int64_t s) { return p.step < s; });
  if (first_hidden != head.end()) {
    superseded.push_back(SupersededRun{gen, std::vector<Point>(first_hidden, head.end())});
    head.erase(first_hidden, head.end());
  }
  ++gen;
  rewinds.push_back(Rewind{gen, step});
  for (ChunkRef& chunk : chunks) {
    if (chunk.superseded || chunk.gen >= gen) continue;
    if (chunk.summary.last_step >= step)
      chunk.hidden_from_step = std::min(chunk.hidden_from_step, step);
  }
  has_latest = false;
  if (!head.empty()) {
    latest = head.back();
    has_latest = true;
  }
}

}  // namespace trainwatch::storage
