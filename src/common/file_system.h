// The file system, injected: production uses PosixFileSystem; crash tests use
// FaultInjectionFileSystem, which forgets every byte not yet synced when told to "crash".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainwatch {

// An append-only file. Not thread-safe.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  // Makes every appended byte durable (fdatasync).
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
  virtual uint64_t Size() const = 0;
};

// Thread-safe. Failures name the path: NotFound where the path (or, for OpenAppendable, its
// directory) does not exist, ResourceExhausted for a full disk (ENOSPC, EDQUOT), IoError with the
// OS's reason otherwise.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Opens `path` for appending, creating it if missing; existing content is kept.
  virtual Result<std::unique_ptr<WritableFile>> OpenAppendable(const std::string& path) = 0;
  virtual Result<std::string> ReadFile(const std::string& path) = 0;
  // Names (not paths) of the entries in `dir`, sorted.
  virtual Result<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  virtual Status CreateDirs(const std::string& dir) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Removes an empty directory.
  virtual Status RemoveDir(const std::string& dir) = 0;
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Status Truncate(const std::string& path, uint64_t size) = 0;
  // Makes the directory's entries (creations, renames, removals) durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  virtual Result<uint64_t> FileSize(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
};

// The real file system. Returns a process-wide instance with no mutable state.
FileSystem& PosixFileSystem();

// Writes `contents` to `path` atomically and durably (temp file, fsync, rename, fsync dir).
// The temp file is `path` + ".tmp"; concurrent calls for the same path are not allowed.
Status WriteFileAtomic(FileSystem& fs, const std::string& path, std::string_view contents);

}  // namespace trainwatch
