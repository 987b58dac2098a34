#include "server/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

namespace trainwatch::server {

Result<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("creating data directory " + dir + ": " + ec.message());
  std::string path = dir + "/LOCK";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoErrorFromErrno("opening " + path, errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char buf[32] = {0};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      std::string holder = n > 0 ? std::string(buf, n) : "unknown";
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      return Status::Unavailable("data directory " + dir +
                                 " is in use by another trainwatch server (pid " + holder + ")");
    }
    return Status::IoErrorFromErrno("locking " + path, err);
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    ::close(fd);
    return Status::IoErrorFromErrno("writing " + path, errno);
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(fd));
}

DataDirLock::~DataDirLock() { ::close(fd_); }

}  // namespace trainwatch::server
