// DataDirLock: makes sure two servers never share a data directory. Holds an exclusive flock on
// <dir>/LOCK for its lifetime; the kernel releases it when the process dies, even by SIGKILL.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

namespace trainwatch::server {

class DataDirLock {
 public:
  // Creates `dir` if needed. Unavailable, naming the holder's pid, when another process holds it.
  static Result<std::unique_ptr<DataDirLock>> Acquire(const std::string& dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace trainwatch::server
