// OutboxLog: the notification outbox's durable, segmented log of deliveries and their acks (the
// file format is docs/format/outbox.md; the delivery threads are NotificationOutbox's, outbox.h).
//
//  - AppendDeliveries writes one delivery record per receiver, each with a new id, and
//    fdatasyncs before it returns: the deliveries then survive kill -9 and power loss.
//  - Ack writes an ack record (not synced: losing one in a crash only means a repeat).
//  - A delivery is pending from its append until its ack. Open replays the segments of an earlier
//    run and keeps the pending deliveries the caller wants.
//  - Disk stays bounded: once the active segment outgrows segment_bytes (and twice the bytes of
//    the pending deliveries), they are copied into a fresh segment and older segments are deleted.
//    Open always starts a fresh segment the same way.
//  - A failed write (a full disk, an I/O error) is returned as the file system's error
//    (ResourceExhausted for ENOSPC, IoError otherwise, with the path); the segment it left with an
//    unknown tail is never written again: the next write starts a fresh segment (holding what is
//    pending), so writing resumes by itself once the disk takes writes again, and nothing
//    acknowledged as written is lost. Deliveries whose append failed are not pending (their bytes
//    may still be replayed by a later Open if they reached the disk).
//
// Not thread-safe: the owner serialises every call (NotificationOutbox holds it under its lock).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/logging.h"
#include "common/status.h"
#include "notify/outbox_format.h"

namespace trainwatch::notify {

struct OutboxLogOptions {
  uint64_t segment_bytes = 4u << 20;  // compaction threshold of the active segment
};

class OutboxLog {
 public:
  // Which replayed deliveries to keep pending; the others are forgotten (left out of the fresh
  // segment).
  using KeepFn = std::function<bool(const OutboxRecord& delivery)>;

  // Opens (creating it if needed) the log in `dir` on `fs`: replays its segments, offers each
  // pending delivery to `keep` (in id order) and appends those kept to `*kept`, then starts a
  // fresh segment holding them and deletes the old ones. A segment with a wrong magic is renamed
  // aside (".corrupt", its deliveries lost) and a torn tail cut off, each with a log line. `fs`
  // and `logger` must outlive the log. Returns the file system's error with the path.
  static Result<std::unique_ptr<OutboxLog>> Open(std::string dir, FileSystem& fs,
                                                 OutboxLogOptions options, Logger& logger,
                                                 const KeepFn& keep,
                                                 std::vector<OutboxRecord>* kept);
  // Close().
  ~OutboxLog();
  OutboxLog(const OutboxLog&) = delete;
  OutboxLog& operator=(const OutboxLog&) = delete;

  // Appends one delivery of `notification_json` per receiver, ids increasing in that order, and
  // syncs. Returns the ids, now pending; on an error none is pending (see above). Unavailable
  // after Close().
  Result<std::vector<uint64_t>> AppendDeliveries(double enqueued_at,
                                                 const std::vector<std::string>& receivers,
                                                 const std::string& notification_json);
  // Ends delivery `id`: it is no longer pending, and an ack record says so (unsynced). False if
  // it was not pending (acked before). A failed ack write is logged; the delivery stays done in
  // memory, and the next segment leaves it out.
  bool Ack(uint64_t id, AckOutcome outcome);

  // Deliveries appended and not acked.
  size_t pending() const { return pending_.size(); }
  bool IsPending(uint64_t id) const { return pending_.count(id) > 0; }
  // The number of the segment being written (tests).
  uint64_t active_segment() const { return segment_number_; }

  // Syncs and closes the active segment (keeping the acks: fewer repeats after a clean restart).
  // Later appends are refused. Idempotent.
  Status Close();

 private:
  OutboxLog(std::string dir, FileSystem& fs, OutboxLogOptions options, Logger& logger);

  // Reads the segments into `replayed` (id -> delivery not acked) and returns the numbers of the
  // segment files read.
  Result<std::vector<uint64_t>> Replay(std::map<uint64_t, OutboxRecord>* replayed);
  Status Append(const std::string& bytes, bool sync);
  // Starts a fresh segment holding every pending delivery, then deletes the older segments.
  Status Rotate();
  void MaybeRotate();

  const std::string dir_;
  FileSystem& fs_;
  const OutboxLogOptions options_;
  Logger& logger_;
  std::unique_ptr<WritableFile> file_;  // the active segment; null before Open's and after Close
  bool closed_ = false;
  uint64_t segment_number_ = 0;
  std::vector<uint64_t> old_segments_;       // to delete at the next rotation
  bool segment_poisoned_ = false;            // a write failed: its tail is unknown, rotate first
  std::map<uint64_t, std::string> pending_;  // id -> framed delivery record
  uint64_t pending_bytes_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace trainwatch::notify
