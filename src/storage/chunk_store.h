// ChunkStore: the store — one RocksDB database (docs/format/store.md) — and the sealed chunks in
// it. It holds the chunk families itself:
//   "c" series_id(be64) chunk_no(be32)  -> chunk header (ChunkRef fields and summary)
//   "d" series_id(be64) chunk_no(be32)  -> encoded chunk (docs/format/chunk.md)
//   "s" series_id(be64)                 -> series record (key, generation, rewinds, flushed LSN)
// and owns the parts that hold the other families, each sharing the database:
//   runs()        "r", "g"             run metadata and graphs (run_catalog.h)
//   entries(type) "h" "H", "i" "I", "t" "T"  per-step entries (step_entry_store.h)
//   blobs()       "b", "B"             image bytes and their reference counts (blob_store.h)
//   writers()     "w"                  writer sequences (writer_sequences.h)
//   checkpoint()  "m"                  the checkpoint LSN (checkpoint_record.h)
// Writes are not synced one by one; Sync() makes everything written so far durable, and the engine
// calls it before the write-ahead log forgets anything. The database sits behind StoreDb
// (store_db.h), which Resume may close and open again in the process; the parts reach it only
// through that. Thread-safe (the parts say what their callers serialise).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "storage/blob_store.h"
#include "storage/checkpoint_record.h"
#include "storage/run_catalog.h"
#include "storage/series.h"
#include "storage/step_entry.h"
#include "storage/step_entry_store.h"
#include "storage/store_db.h"
#include "storage/writer_sequences.h"

namespace rocksdb {
class Env;
}  // namespace rocksdb

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

struct ChunkStoreOptions {
  // The RocksDB environment (file system and background threads) the store runs on; nullptr:
  // RocksDB's default, which the server uses. Crash and fault tests hand in
  // rocksdb::NewCompositeEnv over storage/rocksdb_fault_injection_fs.h. Must outlive the store.
  rocksdb::Env* env = nullptr;
  // The memtable size (0: RocksDB's default, 64 MiB). Crash tests make it small so that memtable
  // flushes, new SST files and MANIFEST updates happen within a few writes.
  size_t write_buffer_bytes = 0;
};

class ChunkStore {
 public:
  static Result<std::unique_ptr<ChunkStore>> Open(const std::string& dir,
                                                  const ChunkStoreOptions& options = {});
  ~ChunkStore();
  ChunkStore(const ChunkStore&) = delete;
  ChunkStore& operator=(const ChunkStore&) = delete;

  // Atomically stores chunks (with their encoded bytes) and the series record that covers them.
  Status PutSeal(const SeriesRecord& series, const std::vector<StoredChunk>& chunks,
                 const std::vector<std::string>& encoded);
  Status PutSeries(const SeriesRecord& series);
  // Deletes the given chunks of a series and rewrites its record (retention).
  Status DeleteChunks(const SeriesRecord& series, const std::vector<uint32_t>& chunk_nos);
  Status DeleteSeries(SeriesId id);
  // Atomically deletes a run's metadata, graph and per-step entries of the kinds that hold no
  // references; the entries of the others (images) go first, name by name
  // (entries(type).DeleteOlderThan with +infinity), releasing their references.
  Status DeleteRun(const std::string& project, const std::string& run);

  // The parts holding the other key families (see the top of this file).
  RunCatalog& runs() { return runs_; }
  const RunCatalog& runs() const { return runs_; }
  StepEntryStore& entries(StepEntryType type) { return *entries_[static_cast<size_t>(type)]; }
  const StepEntryStore& entries(StepEntryType type) const {
    return *entries_[static_cast<size_t>(type)];
  }
  BlobStore& blobs() { return blobs_; }
  const BlobStore& blobs() const { return blobs_; }
  WriterSequences& writers() { return writers_; }
  const WriterSequences& writers() const { return writers_; }
  CheckpointRecord& checkpoint() { return checkpoint_; }
  const CheckpointRecord& checkpoint() const { return checkpoint_; }

  // The encoded points of one chunk.
  Result<std::string> GetChunk(SeriesId id, uint32_t chunk_no) const;

  // Start-up loading: calls fn for every record of a kind, in key order.
  Status ForEachSeries(const std::function<Status(SeriesRecord)>& fn) const;
  Status ForEachChunk(const std::function<Status(StoredChunk)>& fn) const;

  // Makes every write so far durable.
  Status Sync();
  // After a failed write (a full disk, EIO) RocksDB refuses every write until it is recovered; this
  // recovers it in the process once the disk takes writes again (StoreDb::Recover): DB::Resume()
  // after a failed table file or MANIFEST write, and a close and open of the database after a
  // failed write of RocksDB's own log (RocksDB 7.8's Resume() could keep writing to the failed log
  // file, store_db.h), which starts a new log file before any new write. The engine calls it on its
  // clock, from the sealer's retry and before each checkpoint (RocksDB's own automatic recovery is
  // off). OK at once when no write has failed; else the error that still stands, and the caller
  // tries again later. Writes the store acknowledged before the failure are kept; one that failed
  // was refused to its caller, and the engine's log still holds it.
  Status Resume();
  // How many times Resume opened the database again (tests).
  uint64_t Reopens() const;
  // Bytes of the database files on disk (live SST + memtables' WAL).
  uint64_t DiskBytes() const;
  // Compacts everything (benchmarks measure the settled size).
  Status CompactAll();
  // Writes a consistent copy of the database as it is now into `dir` (which must not exist; on
  // the same file system its files are hard links): RocksDB's Checkpoint, after a flush of the
  // memtables. What the copy holds is the store at one point; callers that need it to match a
  // log position stop writing first (cluster snapshots, docs/cluster.md).
  Status CreateCheckpoint(const std::string& dir);

 private:
  explicit ChunkStore(std::unique_ptr<StoreDb> db);
  std::unique_ptr<StoreDb> db_;  // the parts below hold a reference to it
  RunCatalog runs_;
  BlobStore blobs_;
  WriterSequences writers_;
  CheckpointRecord checkpoint_;
  std::array<std::unique_ptr<StepEntryStore>, kStepEntryTypes> entries_;
};

}  // namespace trainwatch::storage
