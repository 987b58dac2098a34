#include "storage/store_db.h"

#include <utility>

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/listener.h>
#include <rocksdb/write_batch.h>

#include "storage/store_internal.h"

namespace trainwatch::storage {

using store_internal::FromRocks;

namespace {

rocksdb::Slice SliceOf(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

Status Closed() {
  return Status::IoError(
      "the store is closed: opening it again after a failed write failed; retrying");
}

}  // namespace

// Turns RocksDB's automatic recovery from a failed write off (the engine recovers the store on its
// own clock, through Recover) and remembers what failed: anything, and whether it was RocksDB's
// own log, from which only a reopen recovers (store_db.h).
class StoreDb::ErrorListener final : public rocksdb::EventListener {
 public:
  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status*) override {
    MutexLock lock(mu_);
    failed_ = true;
    if (reason == rocksdb::BackgroundErrorReason::kWriteCallback ||
        reason == rocksdb::BackgroundErrorReason::kMemTable) {
      log_failed_ = true;
    }
  }
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status,
                            bool* auto_recovery) override {
    *auto_recovery = false;
  }
  bool Failed() const {
    MutexLock lock(mu_);
    return failed_;
  }
  // Whether a write failed since the last TakeFailure, and whether RocksDB's own log did; clears
  // both (a failure reported meanwhile sets them again).
  std::pair<bool, bool> TakeFailure() {
    MutexLock lock(mu_);
    std::pair<bool, bool> out{failed_, log_failed_};
    failed_ = log_failed_ = false;
    return out;
  }
  // Puts back what TakeFailure took, when recovering failed.
  void Restore(bool log_failed) {
    MutexLock lock(mu_);
    failed_ = true;
    log_failed_ = log_failed_ || log_failed;
  }

 private:
  mutable Mutex mu_;
  bool failed_ TW_GUARDED_BY(mu_) = false;
  bool log_failed_ TW_GUARDED_BY(mu_) = false;
};

StoreDb::StoreDb(std::string dir, rocksdb::Options options)
    : dir_(std::move(dir)), options_(std::move(options)) {}

StoreDb::~StoreDb() {
  WriterMutexLock lock(mu_);
  if (db_ != nullptr) (void)db_->Close();
}

Result<std::unique_ptr<StoreDb>> StoreDb::Open(const std::string& dir, rocksdb::Options options) {
  std::unique_ptr<StoreDb> db(new StoreDb(dir, std::move(options)));
  {
    WriterMutexLock lock(db->mu_);
    TW_RETURN_IF_ERROR(db->OpenLocked());
  }
  return db;
}

Status StoreDb::OpenLocked() {
  rocksdb::Options options = options_;
  auto listener = std::make_shared<ErrorListener>();
  options.listeners.push_back(listener);
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir_, &raw);
  if (!s.ok()) return FromRocks(s, "opening store " + dir_);
  db_.reset(raw);
  listener_ = std::move(listener);
  return Status::Ok();
}

Status StoreDb::Write(rocksdb::WriteBatch* batch, std::string_view what, bool sync) {
  rocksdb::WriteOptions options;
  options.sync = sync;
  ReaderMutexLock lock(mu_);
  if (db_ == nullptr) return Closed();
  return FromRocks(db_->Write(options, batch), what);
}

Status StoreDb::Put(std::string_view key, std::string_view value, std::string_view what,
                    bool sync) {
  rocksdb::WriteOptions options;
  options.sync = sync;
  ReaderMutexLock lock(mu_);
  if (db_ == nullptr) return Closed();
  return FromRocks(db_->Put(options, SliceOf(key), SliceOf(value)), what);
}

Status StoreDb::Delete(std::string_view key, std::string_view what) {
  ReaderMutexLock lock(mu_);
  if (db_ == nullptr) return Closed();
  return FromRocks(db_->Delete(rocksdb::WriteOptions(), SliceOf(key)), what);
}

Status StoreDb::Get(std::string_view key, std::string* value, bool* found,
                    std::string_view what) const {
  ReaderMutexLock lock(mu_);
  *found = false;
  if (db_ == nullptr) return Closed();
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), SliceOf(key), value);
  *found = !s.IsNotFound();
  return s.IsNotFound() ? Status::Ok() : FromRocks(s, what);
}

Status StoreDb::Scan(std::string_view start,
                     const std::function<bool(std::string_view, std::string_view)>& fn,
                     std::string_view what) const {
  ReaderMutexLock lock(mu_);
  if (db_ == nullptr) return Closed();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(SliceOf(start)); it->Valid(); it->Next()) {
    if (!fn(std::string_view(it->key().data(), it->key().size()),
            std::string_view(it->value().data(), it->value().size()))) {
      break;
    }
  }
  return FromRocks(it->status(), what);
}

Status StoreDb::With(const std::function<Status(rocksdb::DB&)>& fn) const {
  ReaderMutexLock lock(mu_);
  if (db_ == nullptr) return Closed();
  return fn(*db_);
}

Status StoreDb::ProbeDisk() const {
  rocksdb::Env* env = options_.env != nullptr ? options_.env : rocksdb::Env::Default();
  const std::shared_ptr<rocksdb::FileSystem>& fs = env->GetFileSystem();
  const std::string path = dir_ + "/RECOVERY_PROBE";
  rocksdb::IOOptions io;
  std::unique_ptr<rocksdb::FSWritableFile> file;
  rocksdb::IOStatus s = fs->NewWritableFile(path, rocksdb::FileOptions(), &file, nullptr);
  if (s.ok()) s = file->Append(std::string(4096, '\0'), io, nullptr);
  if (s.ok()) s = file->Sync(io, nullptr);
  if (file != nullptr) {
    rocksdb::IOStatus closed = file->Close(io, nullptr);
    if (s.ok()) s = closed;
  }
  (void)fs->DeleteFile(path, io, nullptr);  // a leftover probe file is harmless
  return FromRocks(s, "checking that the store's disk takes writes");
}

Status StoreDb::Recover() {
  {
    ReaderMutexLock lock(mu_);
    if (db_ != nullptr && !listener_->Failed()) return Status::Ok();  // the common case
  }
  WriterMutexLock lock(mu_);
  auto [failed, log_failed] = listener_->TakeFailure();
  if (db_ != nullptr && !failed) return Status::Ok();
  if (db_ != nullptr && !log_failed) {
    rocksdb::Status resumed = db_->Resume();
    if (resumed.ok()) return Status::Ok();
    if (resumed.IsNoSpace()) {  // still full: Resume() tries again next time
      listener_->Restore(false);
      return FromRocks(resumed, "resuming store");
    }
    // Another error is fatal to Resume() (EIO, in RocksDB 7.8): reopen as below.
    log_failed = true;
  }
  if (db_ != nullptr) {
    if (Status probe = ProbeDisk(); !probe.ok()) {
      listener_->Restore(log_failed);
      return probe;
    }
    (void)db_->Close();  // its error is the failure being recovered from
    db_.reset();
  }
  Status opened = OpenLocked();
  if (opened.ok()) ++reopens_;
  return opened;
}

uint64_t StoreDb::Reopens() const {
  ReaderMutexLock lock(mu_);
  return reopens_;
}

}  // namespace trainwatch::storage
