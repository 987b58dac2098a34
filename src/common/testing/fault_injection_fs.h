// A FileSystem that can simulate a power cut, for crash tests (LevelDB's fault-injection Env).
//
// It wraps a real file system and remembers, per file it has opened for writing, how many bytes
// were made durable by WritableFile::Sync, and whether the file's directory entry was made durable
// by SyncDir. Crash() then throws away everything that a power cut could lose.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/file_system.h"
#include "common/mutex.h"

namespace trainwatch::test {

// What Crash() models and what it does not:
//  - Appended bytes are durable only up to the last successful Sync() of that file; Crash()
//    truncates every tracked file to that length.
//  - A file created through this object is durable only once SyncDir() has been called on its
//    parent directory (the directory string up to the last '/', "." if none, compared textually);
//    Crash() removes files whose creation never reached a SyncDir.
//  - Files that existed before this object first opened them count as fully durable.
//  - Removals, truncations, renames and directory creation count as durable at once (a rename keeps
//    the source's state, so a never-dir-synced file renamed over an old one is removed by Crash(),
//    and the old one is not brought back). Real disks may also reorder or tear within a sync
//    interval; this model does not.
//
// Thread-safe. Every operation but the sync itself runs under one lock, so that Crash() sees it
// entirely before or entirely after; a sync that a crash overtakes fails and counts for nothing.
class FaultInjectionFileSystem final : public FileSystem {
 public:
  enum class Syncs {
    kPerformed,  // file and directory syncs reach `base` too
    // Recorded but not performed: only Crash() decides what survives, so a test of many
    // lifetimes does not wait for the disk. The real disk's durability is never tested here.
    kSimulated,
  };
  // `base` must outlive this object and every file it hands out.
  explicit FaultInjectionFileSystem(FileSystem& base, Syncs syncs = Syncs::kPerformed);
  ~FaultInjectionFileSystem() override;
  FaultInjectionFileSystem(const FaultInjectionFileSystem&) = delete;
  FaultInjectionFileSystem& operator=(const FaultInjectionFileSystem&) = delete;

  Result<std::unique_ptr<WritableFile>> OpenAppendable(const std::string& path) override;
  Result<std::string> ReadFile(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override;
  Status CreateDirs(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveDir(const std::string& dir) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status Truncate(const std::string& path, uint64_t size) override;
  Status SyncDir(const std::string& dir) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  bool Exists(const std::string& path) override;

  // Simulates a power cut, atomically with respect to every other call: drops unsynced data and
  // unsynced file creations as described above, and takes the file system "down": from now until
  // Restart(), every operation fails with IoError (Exists returns false), and files opened before
  // the crash stay dead even after Restart(), as the process that held them would be. Returns an
  // error only if the base file system failed to truncate or remove something.
  Status Crash();

  // Like Crash(), but as a disk that got part of the unsynced data down before the power went:
  // each file keeps a random prefix of its unsynced bytes (from none to all), and each file whose
  // creation was never made durable survives, with such a prefix, half the time. The same seed
  // and the same files give the same outcome.
  Status CrashWithTornWrites(uint64_t seed);

  // Ends the outage begun by Crash(), as if the process had restarted; everything on disk now
  // counts as durable.
  void Restart();

  enum class FailedAppend {
    kNothingWritten,
    kHalfWritten,  // as a disk that fills up mid-write: the first half of the bytes land
  };
  // While `error` is not OK, Append and Sync of every file handed out return it (an I/O error such
  // as EIO or ENOSPC), Append having written what `failed_append` says. Pass Status::Ok() to stop.
  void SetWriteError(Status error, FailedAppend failed_append = FailedAppend::kNothingWritten);
  // The same for SyncDir.
  void SetSyncDirError(Status error);

  // Bytes of `path` known durable, or -1 when the file is not tracked (never opened for writing
  // through this object since the last Crash()).
  int64_t SyncedBytes(const std::string& path) const;

 private:
  class File;
  friend class File;

  struct FileState {
    uint64_t synced_bytes = 0;
    bool dir_entry_durable = true;
  };

  // Called by File with the arguments of its own methods.
  Status FileAppend(const File& file, std::string_view data);
  Status FileSync(const File& file);
  Status FileClose(const File& file);

  bool AliveLocked(uint64_t generation) const TW_REQUIRES(mu_);
  // Crash() without a seed, CrashWithTornWrites() with one.
  Status CrashImpl(std::optional<uint64_t> torn_writes_seed);

  FileSystem& base_;
  const Syncs syncs_;
  mutable Mutex mu_;
  std::map<std::string, FileState> files_ TW_GUARDED_BY(mu_);  // key: the path as opened
  uint64_t generation_ TW_GUARDED_BY(mu_) = 0;                 // bumped by Crash()
  bool down_ TW_GUARDED_BY(mu_) = false;
  Status write_error_ TW_GUARDED_BY(mu_);
  FailedAppend failed_append_ TW_GUARDED_BY(mu_) = FailedAppend::kNothingWritten;
  Status sync_dir_error_ TW_GUARDED_BY(mu_);
};

}  // namespace trainwatch::test
