#include "storage/chunk_cache.h"

namespace trainwatch::storage {

PointsPtr ChunkCache::Get(SeriesId series, uint32_t chunk_no) {
  MutexLock lock(mu_);
  auto it = index_.find(Key{series, chunk_no});
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->points;
}

void ChunkCache::Put(SeriesId series, uint32_t chunk_no, PointsPtr points) {
  MutexLock lock(mu_);
  Key key{series, chunk_no};
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= SizeOf(*it->second);
    lru_.erase(it->second);
    index_.erase(it);
  }
  lru_.push_front(Entry{key, std::move(points), nullptr});
  bytes_ += SizeOf(lru_.front());
  index_[key] = lru_.begin();
  while (bytes_ > capacity_bytes_ && lru_.size() > 1) {
    Entry& victim = lru_.back();
    bytes_ -= SizeOf(victim);
    index_.erase(victim.key);
    lru_.pop_back();
  }
}

void ChunkCache::Erase(SeriesId series, uint32_t chunk_no) {
  MutexLock lock(mu_);
  auto it = index_.find(Key{series, chunk_no});
  if (it == index_.end()) return;
  bytes_ -= SizeOf(*it->second);
  lru_.erase(it->second);
  index_.erase(it);
}

BlocksPtr ChunkCache::GetBlocks(SeriesId series, uint32_t chunk_no) {
  MutexLock lock(mu_);
  auto it = index_.find(Key{series, chunk_no});
  return it == index_.end() ? nullptr : it->second->blocks;
}

void ChunkCache::PutBlocks(SeriesId series, uint32_t chunk_no, BlocksPtr blocks) {
  MutexLock lock(mu_);
  auto it = index_.find(Key{series, chunk_no});
  if (it == index_.end() || it->second->blocks) return;
  it->second->blocks = std::move(blocks);
  bytes_ += it->second->blocks->size() * sizeof(BlockSummary);
}

uint64_t ChunkCache::bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

}  // namespace trainwatch::storage
