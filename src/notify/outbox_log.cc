#include "notify/outbox_log.h"

#include <algorithm>
#include <set>

namespace trainwatch::notify {
namespace {

std::string Join(const std::string& dir, const std::string& name) { return dir + "/" + name; }

}  // namespace

OutboxLog::OutboxLog(std::string dir, FileSystem& fs, OutboxLogOptions options, Logger& logger)
    : dir_(std::move(dir)), fs_(fs), options_(options), logger_(logger) {}

OutboxLog::~OutboxLog() {
  Status s = Close();
  if (!s.ok()) logger_.Warn("outbox: closing the log failed", {{"error", s.ToString()}});
}

Result<std::unique_ptr<OutboxLog>> OutboxLog::Open(std::string dir, FileSystem& fs,
                                                   OutboxLogOptions options, Logger& logger,
                                                   const KeepFn& keep,
                                                   std::vector<OutboxRecord>* kept) {
  std::unique_ptr<OutboxLog> log(new OutboxLog(std::move(dir), fs, options, logger));
  const std::string context = "opening outbox " + log->dir_;
  TW_RETURN_IF_ERROR(fs.CreateDirs(log->dir_).WithContext(context));
  std::map<uint64_t, OutboxRecord> replayed;
  TW_ASSIGN_OR_RETURN(std::vector<uint64_t> segments, log->Replay(&replayed));
  for (auto& [id, record] : replayed) {
    if (!keep(record)) continue;
    std::string framed;
    EncodeDelivery(id, record.enqueued_at, record.receiver, record.notification_json, &framed);
    log->pending_bytes_ += framed.size();
    log->pending_.emplace(id, std::move(framed));
    kept->push_back(std::move(record));
  }
  log->segment_number_ = segments.empty() ? 0 : segments.back();
  log->old_segments_ = std::move(segments);
  TW_RETURN_IF_ERROR(log->Rotate().WithContext(context));
  return log;
}

Result<std::vector<uint64_t>> OutboxLog::Replay(std::map<uint64_t, OutboxRecord>* replayed) {
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_.ListDir(dir_));
  std::vector<uint64_t> segments;
  std::set<uint64_t> acked;
  for (const std::string& name : names) {  // sorted: zero-padded numbers sort numerically
    uint64_t number = 0;
    if (!ParseOutboxSegmentName(name, &number)) continue;
    const std::string path = Join(dir_, name);
    TW_ASSIGN_OR_RETURN(std::string contents, fs_.ReadFile(path));
    Result<DecodedSegment> decoded = DecodeOutboxSegment(contents);
    if (!decoded.ok()) {
      logger_.Error("outbox segment is not readable; renamed aside, its deliveries are lost",
                    {{"path", path}, {"error", decoded.status().message()}});
      TW_RETURN_IF_ERROR(fs_.RenameFile(path, path + ".corrupt"));
      continue;
    }
    segments.push_back(number);
    if (!decoded->stopped_because.empty()) {
      logger_.Warn("outbox segment tail cut off",
                   {{"path", path},
                    {"reason", decoded->stopped_because},
                    {"cut_bytes", contents.size() - decoded->valid_end}});
    }
    for (OutboxRecord& r : decoded->records) {
      next_id_ = std::max(next_id_, r.id + 1);
      if (r.type == OutboxRecordType::kAck) {
        acked.insert(r.id);
        replayed->erase(r.id);
      } else if (!acked.count(r.id)) {
        replayed->emplace(r.id, std::move(r));  // a copy left by a cut-short rotation is ignored
      }
    }
  }
  return segments;
}

Result<std::vector<uint64_t>> OutboxLog::AppendDeliveries(double enqueued_at,
                                                          const std::vector<std::string>& receivers,
                                                          const std::string& notification_json) {
  std::vector<std::pair<uint64_t, std::string>> records;
  std::string bytes;
  for (const std::string& receiver : receivers) {
    std::string framed;
    // Ids are never reused, not even those of a failed append: its bytes may be on disk.
    EncodeDelivery(next_id_, enqueued_at, receiver, notification_json, &framed);
    bytes += framed;
    records.emplace_back(next_id_++, std::move(framed));
  }
  TW_RETURN_IF_ERROR(Append(bytes, /*sync=*/true));
  std::vector<uint64_t> ids;
  for (auto& [id, framed] : records) {
    ids.push_back(id);
    pending_bytes_ += framed.size();
    pending_.emplace(id, std::move(framed));
  }
  MaybeRotate();
  return ids;
}

bool OutboxLog::Ack(uint64_t id, AckOutcome outcome) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return false;
  pending_bytes_ -= it->second.size();
  pending_.erase(it);
  std::string ack;
  EncodeAck(id, outcome, &ack);
  // Not synced: losing an ack in a crash only means sending that notification again.
  Status s = Append(ack, /*sync=*/false);
  if (!s.ok()) logger_.Error("outbox: writing an ack failed", {{"error", s.ToString()}});
  MaybeRotate();
  return true;
}

Status OutboxLog::Append(const std::string& bytes, bool sync) {
  if (closed_) return Status::Unavailable("outbox log closed");
  if (file_ == nullptr || segment_poisoned_) TW_RETURN_IF_ERROR(Rotate());
  Status s = file_->Append(bytes);
  if (s.ok() && sync) s = file_->Sync();
  if (!s.ok()) segment_poisoned_ = true;  // its tail is unknown: the next write starts afresh
  return s;
}

void OutboxLog::MaybeRotate() {
  if (file_ == nullptr || segment_poisoned_) return;  // the next append rotates
  if (file_->Size() <= std::max<uint64_t>(options_.segment_bytes, 2 * pending_bytes_)) return;
  Status s = Rotate();
  if (!s.ok()) logger_.Error("outbox: compaction failed", {{"error", s.ToString()}});
}

Status OutboxLog::Rotate() {
  const uint64_t number = segment_number_ + 1;
  const std::string path = Join(dir_, OutboxSegmentName(number));
  if (fs_.Exists(path)) TW_RETURN_IF_ERROR(fs_.RemoveFile(path));  // left by a failed rotation
  std::string contents(kOutboxMagic);
  for (const auto& [id, framed] : pending_) contents += framed;
  TW_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs_.OpenAppendable(path));
  Status s = file->Append(contents);
  if (s.ok()) s = file->Sync();
  if (s.ok()) s = fs_.SyncDir(dir_);
  if (!s.ok()) {
    (void)file->Close();
    (void)fs_.RemoveFile(path);
    return s.WithContext("starting outbox segment " + path);
  }
  // The new segment holds everything still pending: older ones can go.
  if (file_ != nullptr) {
    (void)file_->Close();
    old_segments_.push_back(segment_number_);
  }
  for (uint64_t old : old_segments_) {
    Status r = fs_.RemoveFile(Join(dir_, OutboxSegmentName(old)));
    if (!r.ok() && r.code() != StatusCode::kNotFound) {
      logger_.Warn("outbox: removing an old segment failed", {{"error", r.ToString()}});
    }
  }
  old_segments_.clear();
  (void)fs_.SyncDir(dir_);
  file_ = std::move(file);
  segment_number_ = number;
  segment_poisoned_ = false;
  return Status::Ok();
}

Status OutboxLog::Close() {
  closed_ = true;
  if (file_ == nullptr) return Status::Ok();
  Status s = file_->Sync();
  Status c = file_->Close();
  file_.reset();
  return s.ok() ? c : s;
}

}  // namespace trainwatch::notify
