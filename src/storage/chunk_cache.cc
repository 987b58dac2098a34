#include "storage/chunk_cache.h"

namespace trainwatch::storage {

PointsPtr ChunkCache::Get(SeriesId series, uint32_t chunk_no) {
  std::lock_guard lock(mu_);
  auto it = index_.find(Key{series, chunk_no});
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->points;
}

void ChunkCache::Put(SeriesId series, uint32_t chunk_no, PointsPtr points) {
  std::lock_guard lock(mu_);
  Key key{series, chunk_no};
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= SizeOf(it->second->points);
    lru_.erase(it->second);
    index_.erase(it);
  }
  bytes_ += SizeOf(points);
  lru_.push_front(Entry{key, std::move(points)});
  index_[key] = lru_.begin();
  while (bytes_ > capacity_bytes_ && lru_.size() > 1) {
    Entry& victim = lru_.back();
    bytes_ -= SizeOf(victim.points);
    index_.erase(victim.key);
    lru_.pop_back();
  }
}

void ChunkCache::Erase(SeriesId series, uint32_t chunk_no) {
  std::lock_guard lock(mu_);
  auto it = index_.find(Key{series, chunk_no});
  if (it == index_.end()) return;
  bytes_ -= SizeOf(it->second->points);
  lru_.erase(it->second);
  index_.erase(it);
}

uint64_t ChunkCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace trainwatch::storage
