// StoreDb: the store's RocksDB database (docs/format/store.md) behind one indirection, so that it
// can be closed and opened again in the process after a failed write (Recover). ChunkStore and the
// parts holding its key families (run_catalog.h, blob_store.h, step_entry_store.h, ...) reach the
// database only through it; none of them keeps a rocksdb::DB.
//
// Why a reopen: after a failed append or sync of RocksDB's own log (WAL), RocksDB 7.8 cannot be
// resumed safely. DB::Resume() switches to a new log file only when its memtable holds data, so
// the next write would go to the failed file, whose writer refuses it for good (Debian's build
// aborts on an assertion), and an error of EIO kind is fatal to Resume() anyway. Closing the
// database and opening it again on the same directory and options recovers the way a restart
// does: the old log is replayed up to its last whole record (a torn record ends it, and RocksDB
// refused every write after the failure, so nothing acknowledged follows it), flushed into a table
// file, and a new log file is started before the first new write.
//
// Thread-safe. Every operation holds the database shared; Recover holds it exclusively while it
// closes and opens it, so no read or write ever sees a closed database or one half-swapped.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <rocksdb/options.h>

#include "common/mutex.h"
#include "common/status.h"

namespace rocksdb {
class DB;
class WriteBatch;
}  // namespace rocksdb

namespace trainwatch::storage {

class StoreDb {
 public:
  // Opens (creating) the database in `dir` with `options`; this object adds its own listener.
  static Result<std::unique_ptr<StoreDb>> Open(const std::string& dir, rocksdb::Options options);
  ~StoreDb();
  StoreDb(const StoreDb&) = delete;
  StoreDb& operator=(const StoreDb&) = delete;

  // Each returns the operation's error with `what` as context; IoError("store closed ...") while a
  // reopen failed and the next Recover has not yet opened it again.
  Status Write(rocksdb::WriteBatch* batch, std::string_view what, bool sync = false)
      TW_EXCLUDES(mu_);
  Status Put(std::string_view key, std::string_view value, std::string_view what, bool sync = false)
      TW_EXCLUDES(mu_);
  Status Delete(std::string_view key, std::string_view what) TW_EXCLUDES(mu_);
  // Reads a value; *found tells whether the key exists (a missing key is no error).
  Status Get(std::string_view key, std::string* value, bool* found, std::string_view what) const
      TW_EXCLUDES(mu_);
  // Calls fn(key, value) for every key from `start` on, in key order, until it returns false.
  // fn must not call back into this object.
  Status Scan(std::string_view start,
              const std::function<bool(std::string_view, std::string_view)>& fn,
              std::string_view what) const TW_EXCLUDES(mu_);
  // Runs fn on the open database, held shared (what the calls above do not cover: syncing,
  // flushing, compacting, properties). fn must not call back into this object.
  Status With(const std::function<Status(rocksdb::DB&)>& fn) const TW_EXCLUDES(mu_);

  // After a failed write RocksDB refuses every write until it is recovered; this recovers it.
  // OK at once when no write has failed since the last recovery. After a failed write of RocksDB's
  // own log (or when DB::Resume() fails for another reason than a full disk), it first checks that
  // the disk takes writes (a small file created, written, synced and removed in the directory),
  // then closes the database and opens it again (see the top of this file); else DB::Resume(),
  // which flushes what the failure left in memory. Returns the error that still stands: the disk
  // still failing (the database stays open and readable), or a failed open (the database stays
  // closed, every operation fails, and the next call tries to open it again).
  Status Recover() TW_EXCLUDES(mu_);
  // How many times Recover opened the database again (tests).
  uint64_t Reopens() const TW_EXCLUDES(mu_);

 private:
  class ErrorListener;
  StoreDb(std::string dir, rocksdb::Options options);
  // Opens the database with a fresh listener. Caller holds mu_ exclusively, db_ is null.
  Status OpenLocked() TW_REQUIRES(mu_);
  // Creates, writes, syncs and removes a probe file in the directory: whether the disk takes
  // writes now.
  Status ProbeDisk() const;

  const std::string dir_;
  const rocksdb::Options options_;  // without the listener, added by each open
  mutable SharedMutex mu_;
  std::unique_ptr<rocksdb::DB> db_ TW_GUARDED_BY(mu_);          // null while a reopen failed
  std::shared_ptr<ErrorListener> listener_ TW_GUARDED_BY(mu_);  // the open database's
  uint64_t reopens_ TW_GUARDED_BY(mu_) = 0;
};

}  // namespace trainwatch::storage
