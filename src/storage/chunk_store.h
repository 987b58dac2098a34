// ChunkStore: the persistent home of sealed chunks, series metadata, run metadata and writer
// sequence numbers, in one RocksDB database. Key layout (docs/format/store.md):
//   "c" series_id(be64) chunk_no(be32)  -> chunk header (ChunkRef fields and summary)
//   "d" series_id(be64) chunk_no(be32)  -> encoded chunk (docs/format/chunk.md)
//   "s" series_id(be64)                 -> series record (key, generation, rewinds, flushed LSN)
//   "r" project "\0" run                -> run metadata (JSON)
//   "w" writer_id                       -> last applied sequence (u64)
//   "m"                                 -> store record (checkpoint LSN)
// Writes are not synced one by one; Sync() makes everything written so far durable, and the engine
// calls it before the write-ahead log forgets anything. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/series.h"

namespace rocksdb {
class DB;
}

namespace trainwatch::storage {

struct SeriesRecord {
  SeriesId id = 0;
  SeriesKey key;
  uint32_t gen = 0;
  uint32_t next_chunk_no = 0;
  uint64_t flushed_lsn = 0;
  std::vector<Rewind> rewinds;
};

// A chunk's header as stored, without the encoded points.
struct StoredChunk {
  SeriesId series_id = 0;
  ChunkRef ref;  // points unset
};

class ChunkStore {
 public:
  static Result<std::unique_ptr<ChunkStore>> Open(const std::string& dir);
  ~ChunkStore();
  ChunkStore(const ChunkStore&) = delete;
  ChunkStore& operator=(const ChunkStore&) = delete;

  // Atomically stores chunks (with their encoded bytes) and the series record that covers them.
  Status PutSeal(const SeriesRecord& series, const std::vector<StoredChunk>& chunks,
                 const std::vector<std::string>& encoded);
  Status PutSeries(const SeriesRecord& series);
  Status PutRun(const std::string& project, const std::string& run, const std::string& json);
  Status PutWriterSequence(const std::string& writer_id, uint64_t sequence);
  Status PutCheckpointLsn(uint64_t lsn);
  // Deletes the given chunks of a series and rewrites its record (retention).
  Status DeleteChunks(const SeriesRecord& series, const std::vector<uint32_t>& chunk_nos);
  Status DeleteSeries(SeriesId id);
  Status DeleteRun(const std::string& project, const std::string& run);

  // The encoded points of one chunk.
  Result<std::string> GetChunk(SeriesId id, uint32_t chunk_no) const;

  // Start-up loading: calls fn for every record of a kind, in key order.
  Status ForEachSeries(const std::function<Status(SeriesRecord)>& fn) const;
  Status ForEachChunk(const std::function<Status(StoredChunk)>& fn) const;
  Status ForEachRun(const std::function<Status(std::string project, std::string run,
                                               std::string json)>& fn) const;
  Status ForEachWriter(const std::function<Status(std::string writer, uint64_t seq)>& fn) const;
  Result<uint64_t> GetCheckpointLsn() const;

  // Makes every write so far durable.
  Status Sync();
  // Bytes of the database files on disk (live SST + memtables' WAL).
  uint64_t DiskBytes() const;
  // Compacts everything (benchmarks measure the settled size).
  Status CompactAll();

 private:
  explicit ChunkStore(std::unique_ptr<rocksdb::DB> db);
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace trainwatch::storage
