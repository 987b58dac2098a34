// Spool: batches waiting on local disk while the server is unreachable (or always, offline), in a
// directory of segment files. The format is in docs/format/spool.md:
//
//   <dir>/<first sequence, 20 digits>.seg   "TWSPOOL1" then records:
//     u64 sequence | u32 points | u32 length | u32 crc32c(payload) | payload = zstd(WriteRequest)
//
// Segments never overlap in sequence, so name order is sequence order. A torn record at the end of
// a segment (a crash while appending) ends that segment; everything before it is kept.
//
// The batcher appends; the sender loads whole segments back (oldest first) and releases a segment
// once every batch in it is acknowledged. The directory is bounded: when an append would exceed
// max_bytes the oldest segments not being sent are dropped (kDropOldest) or the append is refused.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/mutex.h"
#include "common/status.h"

namespace trainwatch::sdk {

struct SpooledBatch {
  uint64_t sequence = 0;
  uint32_t points = 0;
  std::string bytes;  // the serialised WriteRequest
};

struct SpoolOptions {
  uint64_t max_bytes = 1ull << 30;
  uint64_t segment_bytes = 4ull << 20;  // a segment is closed once it is this large
  bool drop_oldest_when_full = true;    // else Append refuses when full
};

class Spool {
 public:
  // Opens (creating) `dir` and indexes the segments already there. `fs` must outlive the spool.
  static Result<std::unique_ptr<Spool>> Open(FileSystem& fs, std::string dir, SpoolOptions options);
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Appends one batch (sequences must increase). `*dropped_points` gets the points of segments
  // dropped to make room. ResourceExhausted if the spool is full and may not drop.
  Status Append(const SpooledBatch& batch, uint64_t* dropped_points);
  // Writes `batches` (ascending, all below every sequence in the spool) as a segment of their own.
  Status AppendSegment(const std::vector<SpooledBatch>& batches);

  // True if some segment has not been handed out by LoadOldest.
  bool HasUnloaded() const;
  // Closes the active segment if it is the oldest unloaded one, reads the oldest unloaded segment
  // and marks it loaded. Returns its id (its first sequence) and batches. NotFound if none.
  Result<std::pair<uint64_t, std::vector<SpooledBatch>>> LoadOldest();
  // Deletes a loaded segment (every batch in it was acknowledged).
  Status Release(uint64_t segment);
  // Forgets that segments were loaded (the sender restarts from the spool after a reconnect).
  void UnloadAll();

  uint64_t bytes() const;
  size_t segment_count() const;
  const std::string& dir() const { return dir_; }
  // Closes the active segment (synced) and removes the directory if it holds no segment.
  Status Close();

 private:
  struct Segment {
    uint64_t bytes = 0;
    uint64_t points = 0;
    bool loaded = false;
  };
  Spool(FileSystem& fs, std::string dir, SpoolOptions options);
  std::string PathOf(uint64_t segment) const;
  Status CloseActive() TW_REQUIRES(mu_);
  // Drops the oldest unloaded, inactive segments until `incoming` more bytes fit.
  Status MakeRoom(uint64_t incoming, uint64_t* dropped_points) TW_REQUIRES(mu_);
  static std::string EncodeRecord(const SpooledBatch& batch);
  Result<std::vector<SpooledBatch>> ReadSegment(uint64_t segment) const;

  FileSystem& fs_;
  const std::string dir_;
  const SpoolOptions options_;
  mutable Mutex mu_;
  std::map<uint64_t, Segment> segments_ TW_GUARDED_BY(mu_);  // by first sequence
  std::unique_ptr<WritableFile> active_ TW_GUARDED_BY(mu_);
  uint64_t active_id_ TW_GUARDED_BY(mu_) = 0;  // valid while active_
  uint64_t total_bytes_ TW_GUARDED_BY(mu_) = 0;
};

// The sequence and points of every batch in a segment file's bytes; stops at a torn or corrupt
// record. Exposed for tests and `trainwatch sync`.
Result<std::vector<SpooledBatch>> DecodeSegment(std::string_view data);

}  // namespace trainwatch::sdk
