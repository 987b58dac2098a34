// A RocksDB FileSystem that can simulate a power cut and a full or failing disk, for the crash and
// fault tests of the store (common/testing/fault_injection_fs.h is the same for our own files).
// Tests only: link tw_storage_testing. Hand it to the store as
// rocksdb::NewCompositeEnv(fs) in ChunkStoreOptions::env.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <rocksdb/file_system.h>

#include "common/mutex.h"

namespace trainwatch::storage::test {

// What Crash() models, after RocksDB's own FaultInjectionTestFS:
//  - Bytes appended to a file are durable only up to its last Sync/Fsync (RangeSync, Flush and
//    Close make nothing durable); Crash() truncates every file written since the last Restart()
//    to that length.
//  - A file created (or renamed into place) since the last Restart() is durable only once its
//    directory was fsynced through a directory object of this file system (FSDirectory::Fsync).
//    Crash() removes such a file, or, where the rename replaced an older durable file, puts the
//    older contents back (RocksDB's CURRENT is swapped in this way).
//  - Files that existed before this object first wrote them count as fully durable; removals
//    and directory creations count as durable at once (a removed file never comes back).
//  - CrashWithTornWrites(seed) keeps, per file, a random prefix of the unsynced bytes, and lets a
//    file whose directory entry was never synced survive half the time.
// From Crash() until Restart(), and for files opened before the crash also after it, the dead
// process's writes, syncs, creations, renames and removals report success and reach nothing:
// RocksDB then closes the dead database without taking its error paths (Debian's librocksdb is
// built with assertions, and some of them fire when a file that failed is used again). Reads go
// to the disk.
//
// Syncs are recorded, not performed on the real disk: only Crash() decides what survives.
//
// Thread-safe: every operation on the tracked state and every write runs under one lock, so a
// crash sees each entirely before or after it; a sync a crash overtakes counts for nothing.
class FaultInjectionRocksFs final : public rocksdb::FileSystemWrapper {
 public:
  explicit FaultInjectionRocksFs(
      std::shared_ptr<rocksdb::FileSystem> base = rocksdb::FileSystem::Default());
  ~FaultInjectionRocksFs() override;
  FaultInjectionRocksFs(const FaultInjectionRocksFs&) = delete;
  FaultInjectionRocksFs& operator=(const FaultInjectionRocksFs&) = delete;

  static const char* kClassName() { return "TrainwatchFaultInjectionRocksFs"; }
  const char* Name() const override { return kClassName(); }

  // Simulates a power cut as described above. Returns the first error of the base file system
  // while dropping data (none expected).
  rocksdb::IOStatus Crash();
  rocksdb::IOStatus CrashWithTornWrites(uint64_t seed);
  // Ends the outage, as if the process had restarted: what is on disk now counts as durable.
  void Restart();

  // While `error` is not OK, appends, syncs and file creations return it without touching the
  // disk: IOStatus::NoSpace() for a full disk, IOStatus::IOError() for EIO. OK to stop. With
  // `only_suffix`, only those of files whose path ends so (".sst": memtable flushes and
  // compactions, not RocksDB's own log).
  // With `torn_appends`, a refused append first writes the first half of its bytes (unsynced), as
  // a disk that fills up mid-write: RocksDB's own log then ends in a torn record.
  void SetWriteError(rocksdb::IOStatus error, std::string only_suffix = "",
                     bool torn_appends = false);
  // How many operations SetWriteError has refused so far.
  uint64_t RefusedWrites() const;

  // --- rocksdb::FileSystem ---
  rocksdb::IOStatus NewSequentialFile(const std::string& f, const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSSequentialFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions& options,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                                        rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old_f,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewRandomRWFile(const std::string& f, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSRandomRWFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& options,
                                 std::unique_ptr<rocksdb::FSDirectory>* r,
                                 rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to,
                               const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus LinkFile(const std::string& from, const std::string& to,
                             const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& f, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus Truncate(const std::string& f, size_t size, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus CreateDir(const std::string& d, const rocksdb::IOOptions& options,
                              rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus CreateDirIfMissing(const std::string& d, const rocksdb::IOOptions& options,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus GetChildren(const std::string& dir, const rocksdb::IOOptions& options,
                                std::vector<std::string>* r, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus FileExists(const std::string& f, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override;

 private:
  class File;
  class Directory;
  friend class File;
  friend class Directory;

  struct FileState {
    uint64_t synced_bytes = 0;
    bool dir_entry_durable = true;
    // What a crash puts back where a rename replaced a durable file whose directory was not
    // synced since.
    std::optional<std::string> replaced_contents;
  };

  // Called by File and Directory.
  rocksdb::IOStatus FileAppend(File& file, const rocksdb::Slice& data,
                               const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg);
  rocksdb::IOStatus FileSync(File& file, bool full, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg);
  rocksdb::IOStatus DirSync(const std::string& dir);
  bool Alive(uint64_t generation) const;

  bool AliveLocked(uint64_t generation) const TW_REQUIRES(mu_) {
    return !down_ && generation == generation_;
  }
  // Refuses the call with the injected error, counting it.
  rocksdb::IOStatus InjectedLocked() TW_REQUIRES(mu_);
  // Whether a write to `path` is refused now.
  bool RefusesLocked(const std::string& path) const TW_REQUIRES(mu_);
  // Starts tracking a file just created at `path`.
  void TrackNewLocked(const std::string& path, bool existed, uint64_t size) TW_REQUIRES(mu_);
  rocksdb::IOStatus CrashImpl(std::optional<uint64_t> torn_writes_seed);
  // Wraps a writable file of the base file system, of the current generation.
  std::unique_ptr<rocksdb::FSWritableFile> Wrap(const std::string& path,
                                                std::unique_ptr<rocksdb::FSWritableFile> base)
      TW_REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<std::string, FileState> files_ TW_GUARDED_BY(mu_);  // by path as RocksDB names it
  uint64_t generation_ TW_GUARDED_BY(mu_) = 0;                 // bumped by each crash
  bool down_ TW_GUARDED_BY(mu_) = false;
  rocksdb::IOStatus write_error_ TW_GUARDED_BY(mu_);
  std::string write_error_suffix_ TW_GUARDED_BY(mu_);
  bool torn_appends_ TW_GUARDED_BY(mu_) = false;
  uint64_t refused_writes_ TW_GUARDED_BY(mu_) = 0;
};

}  // namespace trainwatch::storage::test
