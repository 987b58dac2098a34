// WalLog: opening, appending (the group-commit writer thread), truncation and closing.
// Recovery and Replay live in wal_replay.cc.
#include "storage/wal/wal_log.h"

#include <utility>

#include "storage/wal/wal_format.h"
#include "storage/wal/wal_writer.h"

namespace trainwatch::storage::wal {

WalLog::WalLog(FileSystem& fs, std::string dir, WalOptions options)
    : fs_(fs), dir_(std::move(dir)), options_(options) {}

Result<std::unique_ptr<WalLog>> WalLog::Open(FileSystem& fs, std::string dir, WalOptions options) {
  if (options.segment_bytes == 0) return Status::InvalidArgument("WAL segment_bytes must be > 0");
  if (options.max_queue_bytes == 0 || options.max_group_bytes == 0) {
    return Status::InvalidArgument("WAL max_queue_bytes and max_group_bytes must be > 0");
  }
  if (options.max_record_bytes > kMaxRecordBytes) {
    return Status::InvalidArgument("WAL max_record_bytes must be at most " +
                                   std::to_string(kMaxRecordBytes));
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::unique_ptr<WalLog> log(new WalLog(fs, std::move(dir), options));
  TW_RETURN_IF_ERROR(log->Recover().WithContext("opening WAL in " + log->dir_));
  MutexLock close_lock(log->close_mu_);
  log->writer_ = std::thread(&WalLog::WriterLoop, log.get());
  MutexLock lock(log->mu_);
  log->writer_id_ = log->writer_.get_id();
  return log;
}

WalLog::~WalLog() { Close(); }

std::string WalLog::SegmentPath(uint64_t first_lsn) const {
  return dir_ + "/" + SegmentFileName(first_lsn);
}

void WalLog::Append(std::string record, AppendCallback done) {
  Status refused;
  {
    MutexLock lock(mu_);
    if (record.size() > options_.max_record_bytes) {
      refused = Status::InvalidArgument("WAL record of " + std::to_string(record.size()) +
                                        " bytes exceeds the maximum of " +
                                        std::to_string(options_.max_record_bytes));
    } else {
      // The writer thread never waits: only it can make room.
      const bool may_wait = std::this_thread::get_id() != writer_id_;
      auto must_wait = [&]() TW_REQUIRES(mu_) {
        return may_wait && !closing_ && failure_.ok() && stats_.queued_bytes > 0 &&
               stats_.queued_bytes + record.size() > options_.max_queue_bytes;
      };
      if (must_wait()) {
        ++stats_.backpressure_waits;
        space_cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return !must_wait(); });
      }
      if (closing_) {
        refused = Status::Unavailable("WAL " + dir_ + " is closed");
      } else if (!failure_.ok()) {
        refused = failure_;
      }
    }
    if (refused.ok()) {
      stats_.queued_bytes += record.size();
      appended_ = true;
      queue_.push_back(Pending{next_lsn_++, std::move(record), std::move(done)});
      work_cv_.notify_one();
      return;
    }
    ++stats_.failed_appends;
  }
  done(refused, 0);
}

void WalLog::WriterLoop() {
  std::vector<Pending> group;
  while (true) {
    Status failure;
    WalStats delta;
    Status status;
    {
      // The group is taken and written under write_mu_, so that TruncateBefore never sees a
      // group that has left the queue but is not on disk yet.
      MutexLock write_lock(write_mu_);
      {
        MutexLock lock(mu_);
        if (queue_.empty() && !closing_) {
          write_lock.Unlock();  // TruncateBefore may roll while the writer waits
          const bool retry_due = WaitForWork(lock);
          lock.Unlock();
          write_lock.Lock();
          lock.Lock();
          if (retry_due && !failure_.ok() && queue_.empty() && !closing_) {
            lock.Unlock();
            Status restarted = StartAfresh();
            lock.Lock();
            if (restarted.ok()) {
              failure_ = Status::Ok();
              ++stats_.restarts;
            }
            continue;
          }
        }
        if (queue_.empty()) break;  // closing, and everything queued is done
        uint64_t group_bytes = 0;
        do {
          group_bytes += queue_.front().record.size();
          group.push_back(std::move(queue_.front()));
          queue_.pop_front();
        } while (!queue_.empty() &&
                 group_bytes + queue_.front().record.size() <= options_.max_group_bytes);
        failure = failure_;
      }
      status = failure.ok() ? WriteGroup(group, &delta) : failure;
    }
    uint64_t payload = 0;
    for (Pending& p : group) {
      payload += p.record.size();
      std::string().swap(p.record);  // the callbacks need only the LSN
    }
    {
      MutexLock lock(mu_);
      stats_.queued_bytes -= payload;
      stats_.syncs += delta.syncs;
      if (status.ok()) {
        stats_.appends += group.size();
        stats_.groups += 1;
        stats_.bytes_written += delta.bytes_written;
        stats_.payload_bytes += payload;
      } else {
        stats_.failed_appends += group.size();
        if (failure_.ok()) failure_ = status.WithContext("WAL stopped after a write failure");
      }
      space_cv_.notify_all();
    }
    for (Pending& p : group) p.done(status, p.lsn);
    group.clear();
  }
  MutexLock write_lock(write_mu_);
  if (active_ != nullptr) {
    Status s = active_->Close();
    active_.reset();
    MutexLock lock(mu_);
    if (!s.ok() && failure_.ok()) failure_ = s;
  }
}

Status WalLog::WriteGroup(const std::vector<Pending>& group, WalStats* delta) {
  for (const Pending& p : group) {
    const uint64_t framed = kRecordHeaderSize + p.record.size();
    if (active_ == nullptr ||
        (active_->records() > 0 && active_->size() + framed > options_.segment_bytes)) {
      TW_RETURN_IF_ERROR(StartSegment(p.lsn, delta));
    }
    active_->Add(p.lsn, p.record);
    delta->bytes_written += framed;
  }
  TW_RETURN_IF_ERROR(active_->Sync());  // one write and one fdatasync for the whole group
  ++delta->syncs;
  TW_RETURN_IF_ERROR(SyncDirIfNeeded(delta));
  MutexLock lock(mu_);
  segments_.back().bytes = active_->size();
  return Status::Ok();
}

Status WalLog::StartSegment(uint64_t lsn, WalStats* delta) {
  if (active_ != nullptr) {
    // The old segment must be complete on disk, file and name, before the next one can exist:
    // otherwise a crash could keep the new segment and lose the old one's records, a hole that
    // recovery cannot repair.
    TW_RETURN_IF_ERROR(active_->Sync());
    ++delta->syncs;
    TW_RETURN_IF_ERROR(SyncDirIfNeeded(delta));
    TW_RETURN_IF_ERROR(active_->Close());
    MutexLock lock(mu_);
    segments_.back().bytes = active_->size();
    active_.reset();
  }
  TW_ASSIGN_OR_RETURN(active_, SegmentWriter::Create(fs_, SegmentPath(lsn), lsn));
  dir_dirty_ = true;
  delta->bytes_written += kSegmentHeaderSize;
  MutexLock lock(mu_);
  // Recovery may have left an empty placeholder with this very name (see Recover); reuse its entry.
  if (segments_.empty() || segments_.back().first_lsn != lsn) segments_.push_back({lsn, 0});
  return Status::Ok();
}

bool WalLog::WaitForWork(MutexLock& lock) {
  auto ready = [&]() TW_REQUIRES(mu_) { return !queue_.empty() || closing_; };
  if (options_.retry_clock == nullptr) {
    work_cv_.wait(lock.native(), ready);
    return false;
  }
  // Through the clock even while healthy (with no deadline): a test's ManualClock then sees an
  // idle writer among its waiters.
  const int64_t deadline =
      failure_.ok() ? Clock::kNever : options_.retry_clock->DeadlineIn(options_.retry_seconds);
  return !options_.retry_clock->WaitUntil(lock.native(), work_cv_, deadline, ready);
}

Status WalLog::StartAfresh() {
  if (active_ != nullptr) {
    (void)active_->Close();  // its unsynced tail is unknown: never written to again
    active_.reset();
  }
  uint64_t lsn;
  {
    MutexLock lock(mu_);
    lsn = next_lsn_;
  }
  // No record from `lsn` on was ever written: a file here is an earlier attempt's leftover.
  const std::string path = SegmentPath(lsn);
  if (fs_.Exists(path)) TW_RETURN_IF_ERROR(fs_.RemoveFile(path));
  TW_ASSIGN_OR_RETURN(std::unique_ptr<SegmentWriter> segment,
                      SegmentWriter::Create(fs_, path, lsn));
  Status s = segment->Sync();  // writes the header
  if (s.ok()) s = fs_.SyncDir(dir_);
  if (!s.ok()) {
    segment.reset();
    (void)fs_.RemoveFile(path);
    return s;
  }
  active_ = std::move(segment);
  dir_dirty_ = false;
  MutexLock lock(mu_);
  segments_.push_back({lsn, active_->size()});
  stats_.bytes_written += kSegmentHeaderSize;
  stats_.syncs += 2;
  return Status::Ok();
}

Status WalLog::SyncDirIfNeeded(WalStats* delta) {
  if (!dir_dirty_) return Status::Ok();
  // A new file survives a crash only once its directory entry is durable.
  TW_RETURN_IF_ERROR(fs_.SyncDir(dir_).WithContext("syncing WAL directory"));
  ++delta->syncs;
  dir_dirty_ = false;
  return Status::Ok();
}

Status WalLog::RetireLastSegment(uint64_t lsn) {
  {
    // A segment created by an earlier roll whose directory sync failed: durable first, as the
    // segments before it are about to go.
    WalStats delta;
    Status synced = SyncDirIfNeeded(&delta);
    MutexLock lock(mu_);
    stats_.syncs += delta.syncs;
    TW_RETURN_IF_ERROR(synced);
  }
  uint64_t next_to_write;
  bool written_all;  // closed and drained: no group will ever be written again
  {
    MutexLock lock(mu_);
    if (!failure_.ok() || segments_.empty() || segments_.back().bytes == 0) {
      return Status::Ok();  // failed: left to recovery; or nothing to retire
    }
    // With write_mu_ held no group is between the queue and the disk: every record before the
    // queue's first (or before next_lsn_) is written and synced, and none after it.
    next_to_write = queue_.empty() ? next_lsn_ : queue_.front().lsn;
    if (next_to_write > lsn) return Status::Ok();  // the last segment holds records still needed
    // A closed log retires too (the engine's last checkpoint comes after the log's Close, so
    // that a stopped server keeps no byte of what its store holds).
    written_all = closing_ && queue_.empty();
  }
  // The active segment was synced by its last group (a failed one fail-stops the log), so closing
  // it needs no sync. Its successor exists on disk before any segment is deleted: recovery then
  // finds it last, empty, and takes the next LSN from its name.
  if (active_ != nullptr) {
    Status s = active_->Close();
    active_.reset();
    TW_RETURN_IF_ERROR(s.WithContext("closing the WAL segment to retire"));
  }
  // A failure before this point leaves no active segment: the next group starts one (reusing an
  // empty file at the name).
  TW_ASSIGN_OR_RETURN(active_,
                      SegmentWriter::Create(fs_, SegmentPath(next_to_write), next_to_write));
  dir_dirty_ = true;
  // Closed: dropped unflushed, so it stays the 0-byte placeholder whose name tells recovery the
  // next LSN (its header would have gone out with its first group).
  if (written_all) active_.reset();
  {
    MutexLock lock(mu_);
    stats_.bytes_written += kSegmentHeaderSize;  // buffered: written with the next group
    segments_.push_back({next_to_write, 0});
  }
  // Until the new entry is durable the old segment must stay (the next group syncs it otherwise).
  WalStats delta;
  Status synced = SyncDirIfNeeded(&delta);
  MutexLock lock(mu_);
  stats_.syncs += delta.syncs;
  return synced;
}

Status WalLog::TruncateBefore(uint64_t lsn) {
  MutexLock truncate_lock(truncate_mu_);
  {
    MutexLock write_lock(write_mu_);
    // A failed roll deletes nothing this time (the old last segment may be the only one whose
    // name tells the next LSN); the log itself goes on, and the next truncation deletes it.
    Status rolled = RetireLastSegment(lsn);
    if (!rolled.ok()) {
      return rolled.WithContext("retiring the last WAL segment before lsn " + std::to_string(lsn));
    }
  }
  std::vector<uint64_t> doomed;
  {
    MutexLock lock(mu_);
    // Segment i holds LSNs [first_i, first_{i+1}); the last one has no successor and stays.
    for (size_t i = 0; i + 1 < segments_.size() && segments_[i + 1].first_lsn <= lsn; ++i) {
      doomed.push_back(segments_[i].first_lsn);
    }
  }
  if (doomed.empty()) return Status::Ok();
  Status status;
  size_t removed = 0;
  for (; removed < doomed.size(); ++removed) {
    status = fs_.RemoveFile(SegmentPath(doomed[removed]));
    if (status.code() == StatusCode::kNotFound) status = Status::Ok();
    if (!status.ok()) break;
  }
  {
    // Only TruncateBefore removes entries, and only from the front, so the first `removed`
    // entries are still the ones removed.
    MutexLock lock(mu_);
    segments_.erase(segments_.begin(), segments_.begin() + static_cast<ptrdiff_t>(removed));
  }
  TW_RETURN_IF_ERROR(status.WithContext("truncating WAL before lsn " + std::to_string(lsn)));
  return fs_.SyncDir(dir_).WithContext("truncating WAL before lsn " + std::to_string(lsn));
}

uint64_t WalLog::NextLsn() const {
  MutexLock lock(mu_);
  return next_lsn_;
}

uint64_t WalLog::DiskBytes() const {
  MutexLock lock(mu_);
  uint64_t total = 0;
  for (const Segment& s : segments_) total += s.bytes;
  return total;
}

void WalLog::Close() {
  bool on_writer;
  {
    MutexLock lock(mu_);
    closing_ = true;
    on_writer = std::this_thread::get_id() == writer_id_;
  }
  work_cv_.notify_all();
  space_cv_.notify_all();
  if (on_writer) return;  // called from a callback: the writer exits once the queue is drained
  MutexLock close_lock(close_mu_);
  if (writer_.joinable()) writer_.join();
}

WalStats WalLog::Stats() const {
  MutexLock lock(mu_);
  WalStats stats = stats_;
  stats.segments = segments_.size();
  for (const Segment& s : segments_) stats.disk_bytes += s.bytes;
  return stats;
}

Status WalLog::Health() const {
  MutexLock lock(mu_);
  return failure_;
}

}  // namespace trainwatch::storage::wal
