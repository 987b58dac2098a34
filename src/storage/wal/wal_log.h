// WalLog: the single-node Log, a directory of segment files written with group commit.
//
// Format: wal_format.h and docs/format/wal.md.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/mutex.h"
#include "common/status.h"
#include "storage/log.h"

namespace trainwatch::storage::wal {

class SegmentWriter;

struct WalOptions {
  // A new segment is started when the next record would take the active one past this many
  // bytes. A segment always takes at least one record, so a larger record gets one of its own.
  uint64_t segment_bytes = uint64_t{64} << 20;
  // Backpressure: records appended but not yet written and synced may hold at most this many
  // payload bytes; Append blocks until the writer makes room. A record larger than this is let in
  // once nothing else is pending.
  uint64_t max_queue_bytes = uint64_t{256} << 20;
  // A group takes queued records up to this many payload bytes (always at least one record); the
  // rest wait for the next group. Bounds the write buffer and the latency of one group; beyond a
  // few MiB a bigger group saves no measurable fsync time.
  uint64_t max_group_bytes = uint64_t{8} << 20;
  // Larger records are refused (InvalidArgument). At most kMaxRecordBytes (1 GiB), the format's
  // limit.
  uint64_t max_record_bytes = uint64_t{1} << 30;
  // After a write or sync failure (a full disk, EIO) the log refuses appends; with a clock it
  // tries to start afresh every retry_seconds on that clock (see the class comment) and takes
  // appends again once that succeeds. Without one it stays stopped until reopened. Must outlive
  // the log.
  const Clock* retry_clock = nullptr;
  double retry_seconds = 1;
};

// Counters for metrics; a snapshot taken by WalLog::Stats().
struct WalStats {
  uint64_t appends = 0;             // records made durable
  uint64_t failed_appends = 0;      // records whose callback got an error
  uint64_t groups = 0;              // group commits, each ending in one fdatasync
  uint64_t syncs = 0;               // fdatasync and directory fsync calls, segment rolls included
  uint64_t bytes_written = 0;       // bytes written to segments, headers and framing included
  uint64_t payload_bytes = 0;       // payload bytes of the records made durable
  uint64_t backpressure_waits = 0;  // Append calls that blocked on max_queue_bytes
  uint64_t restarts = 0;            // fresh segments started after a failure
  uint64_t queued_bytes = 0;        // gauge: payload bytes appended and not yet durable
  uint64_t segments = 0;            // gauge: segment files
  uint64_t disk_bytes = 0;          // gauge: bytes of all segment files
};

// Thread-safe. Appends from any number of threads are queued; one writer thread owned by the log
// takes everything queued (up to max_group_bytes), writes it with one write call, syncs once
// (group commit), then runs the callbacks in LSN order, one at a time. While it syncs, new appends
// queue for the next group.
//
// Failure model: an I/O error while writing or syncing fails every callback of that group and of
// every record queued behind it, and stops the log: later appends fail at once with that error
// (ResourceExhausted for a full disk). After a failed fsync the kernel may have dropped the dirty
// pages and cleared the error, so the failed segment's unsynced tail is unknown and a retried
// fsync could report success for data that is gone: the log never writes to that segment again.
// With WalOptions::retry_clock it instead starts a fresh segment, named after the next LSN, every
// retry_seconds while stopped (file, header, fdatasync, directory fsync; a failed attempt's file
// is removed); once one succeeds appends are taken again. The LSNs of the failed records are not
// reused: replay reports their gap, and the abandoned segment's torn tail, as damage it skipped
// (a failed record whose bytes did reach the disk may be replayed: a refused write's outcome is
// unknown, as with any database). Health() returns the error while stopped.
//
// Callbacks run on the writer thread: they should be quick, and may call Append (which then never
// blocks on backpressure) and Close (which then returns without waiting), but must not destroy
// the log. Appends the log refuses at once (after Close, after a fail-stop, over
// max_record_bytes) run their callback inline on the calling thread with the error and lsn 0; such
// records take no LSN.
class WalLog final : public Log {
 public:
  // Opens (creating if needed) the WAL in `dir`. Finds the segments and recovers the last one: a
  // torn or corrupt tail is truncated away (reported by the next Replay), and the segment and the
  // directory are synced, so that whatever Replay returns is durable. NextLsn() and Append() are
  // right even if Replay is never called. The next Append starts a new segment. `fs` must
  // outlive the log. Returns InvalidArgument for bad options, or the file system's error.
  static Result<std::unique_ptr<WalLog>> Open(FileSystem& fs, std::string dir,
                                              WalOptions options = {});

  // Closes (see Close) and waits for the writer thread. No other call may be in flight, and it
  // must not run inside an append callback.
  ~WalLog() override;
  WalLog(const WalLog&) = delete;
  WalLog& operator=(const WalLog&) = delete;

  // See Log::Append and the class comment. Blocks while max_queue_bytes are pending.
  void Append(std::string record, AppendCallback done) override;

  // See Log::Replay. Reads segments in order, skipping those wholly below from_lsn (from_lsn 0
  // means "from the oldest record kept"). A bad record in a segment other than the last is
  // reported (file, offset, reason) and the rest of that segment skipped; replay goes on with the
  // next segment. LSN gaps are reported, including records from from_lsn on that are missing at
  // the start or end. Reads one whole segment into memory at a time. Returns InvalidArgument once
  // an Append was accepted, the file system's error if a segment cannot be read, or fn's error
  // (with the LSN as context).
  Result<ReplayStats> Replay(
      uint64_t from_lsn,
      const std::function<Status(uint64_t lsn, std::string_view record)>& fn) override;

  // Deletes the segments whose records all have LSN < lsn, then syncs the directory. When every
  // record written to disk has LSN < lsn (a checkpoint with no newer writes), the last segment
  // goes too: the writer rolls first to a new, empty segment named after the next record's LSN
  // (a 0-byte file until its first group, which tells recovery the next LSN), so the log keeps no
  // byte of a covered record. Safe to call at any time, concurrently with Append; waits for a
  // group being written. Does nothing to the segments after a fail-stop but delete older ones.
  Status TruncateBefore(uint64_t lsn) override;

  uint64_t NextLsn() const override;
  uint64_t DiskBytes() const override;

  // Lets the writer finish every record queued so far (their callbacks run), stops the writer
  // thread and closes the active segment; later Appends get Unavailable. Idempotent.
  void Close() override;

  WalStats Stats() const;
  // OK, or the error that stopped the log.
  Status Health() const override;

 private:
  struct Pending {
    uint64_t lsn;
    std::string record;
    AppendCallback done;
  };
  struct Segment {
    uint64_t first_lsn;
    uint64_t bytes;
  };

  WalLog(FileSystem& fs, std::string dir, WalOptions options);

  // Open's work: lists segments, repairs the last one, sets next_lsn_. (wal_replay.cc)
  Status Recover();
  std::string SegmentPath(uint64_t first_lsn) const;

  // The writer thread.
  void WriterLoop();
  // Writes and syncs one group, rolling segments as needed. Writer thread only.
  Status WriteGroup(const std::vector<Pending>& group, WalStats* delta) TW_REQUIRES(write_mu_);
  // Syncs and closes the active segment, if any, and starts one whose first record is `lsn`.
  // Writer thread only.
  Status StartSegment(uint64_t lsn, WalStats* delta) TW_REQUIRES(write_mu_);
  // After a failure: abandons the active segment and starts a fresh, empty one named after the
  // next LSN, synced with its directory entry. Writer thread, holding write_mu_, queue empty.
  Status StartAfresh() TW_REQUIRES(write_mu_);
  // Waits for work (through the retry clock when there is one); while stopped, for at most
  // retry_seconds. Returns true when it is time to try StartAfresh. `lock` holds mu_.
  bool WaitForWork(MutexLock& lock) TW_REQUIRES(mu_);
  // Fsyncs the directory if a segment was created since it was last synced. Writer thread only.
  Status SyncDirIfNeeded(WalStats* delta) TW_REQUIRES(write_mu_);
  // TruncateBefore's roll: if every record written has LSN < lsn and the last segment holds any,
  // closes the active segment and creates the next one, empty, named after the next LSN to be
  // written, its directory entry synced. Caller holds write_mu_ (not mu_).
  Status RetireLastSegment(uint64_t lsn) TW_REQUIRES(write_mu_);

  FileSystem& fs_;
  const std::string dir_;
  const WalOptions options_;

  mutable Mutex mu_;
  std::condition_variable work_cv_;   // signalled when queue_ gains records or closing_ is set
  std::condition_variable space_cv_;  // signalled when queued bytes drop, or on close/failure
  std::deque<Pending> queue_ TW_GUARDED_BY(mu_);  // in LSN order
  uint64_t next_lsn_ TW_GUARDED_BY(mu_) = 1;
  bool appended_ TW_GUARDED_BY(mu_) = false;  // an Append was accepted
  bool closing_ TW_GUARDED_BY(mu_) = false;
  Status failure_ TW_GUARDED_BY(mu_);                 // sticky once set
  std::vector<Segment> segments_ TW_GUARDED_BY(mu_);  // ascending first_lsn, active last
  WalStats stats_ TW_GUARDED_BY(mu_);                 // queued_bytes is the backpressure gauge
  std::thread::id writer_id_ TW_GUARDED_BY(mu_);      // set by Open before it returns
  ReplayStats recovery_ TW_GUARDED_BY(mu_);           // what Open cut off, for Replay to report

  Mutex truncate_mu_;  // serializes TruncateBefore calls; taken before write_mu_
  // Held by the writer thread from taking a group off the queue until it is written and synced,
  // and by TruncateBefore while it rolls: whoever holds it owns active_ and dir_dirty_. Taken
  // before mu_.
  Mutex write_mu_;
  Mutex close_mu_;                               // serializes joining writer_
  std::thread writer_ TW_GUARDED_BY(close_mu_);  // once started

  // The writer thread's, and TruncateBefore's while it rolls.
  std::unique_ptr<SegmentWriter> active_ TW_GUARDED_BY(write_mu_);
  // A segment was created and the directory not synced since.
  bool dir_dirty_ TW_GUARDED_BY(write_mu_) = false;
};

}  // namespace trainwatch::storage::wal
