// ChunkCache: decoded chunks kept in memory, least recently used first out, within a byte budget.
// Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "storage/block_summary.h"
#include "storage/encoding/point.h"
#include "storage/series_key.h"

namespace trainwatch::storage {

using PointsPtr = std::shared_ptr<const std::vector<Point>>;
using BlocksPtr = std::shared_ptr<const std::vector<BlockSummary>>;

class ChunkCache {
 public:
  explicit ChunkCache(uint64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}
  ChunkCache(const ChunkCache&) = delete;
  ChunkCache& operator=(const ChunkCache&) = delete;

  // nullptr when absent.
  PointsPtr Get(SeriesId series, uint32_t chunk_no);
  void Put(SeriesId series, uint32_t chunk_no, PointsPtr points);
  void Erase(SeriesId series, uint32_t chunk_no);
  // Block summaries of a cached chunk (for downsampling); nullptr when absent. PutBlocks does
  // nothing unless the chunk's points are cached.
  BlocksPtr GetBlocks(SeriesId series, uint32_t chunk_no);
  void PutBlocks(SeriesId series, uint32_t chunk_no, BlocksPtr blocks);
  uint64_t bytes() const;

 private:
  struct Key {
    SeriesId series;
    uint32_t chunk_no;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.series * 1000003 + k.chunk_no);
    }
  };
  struct Entry {
    Key key;
    PointsPtr points;
    BlocksPtr blocks;  // may be null
  };
  static uint64_t SizeOf(const Entry& e) {
    return e.points->size() * sizeof(Point) +
           (e.blocks ? e.blocks->size() * sizeof(BlockSummary) : 0) + 64;
  }

  const uint64_t capacity_bytes_;
  mutable Mutex mu_;
  std::list<Entry> lru_ TW_GUARDED_BY(mu_);  // front = most recent
  std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index_ TW_GUARDED_BY(mu_);
  uint64_t bytes_ TW_GUARDED_BY(mu_) = 0;
};

}  // namespace trainwatch::storage
