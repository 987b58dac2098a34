#include "common/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace trainwatch {
namespace {

// "<what> <path>: <strerror>", NotFound for ENOENT so callers can tell a missing file apart, and
// ResourceExhausted for a full disk or quota (the server answers 507 and retries by itself).
Status PosixError(std::string_view what, const std::string& path, int err) {
  std::string context = std::string(what) + " " + path;
  if (err == ENOENT) return Status::NotFound(context + ": no such file or directory");
  if (err == ENOSPC || err == EDQUOT) {
    return Status::ResourceExhausted(context + ": " + std::strerror(err));
  }
  return Status::IoErrorFromErrno(context, err);
}

std::string ParentDir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  PosixWritableFile(const PosixWritableFile&) = delete;
  PosixWritableFile& operator=(const PosixWritableFile&) = delete;

  Status Append(std::string_view data) override {
    if (fd_ < 0) return Status::IoError("append to closed file " + path_);
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError("writing", path_, errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
      size_ += static_cast<uint64_t>(n);
    }
    return Status::Ok();
  }

  Status Sync() override {
    if (fd_ < 0) return Status::IoError("sync of closed file " + path_);
    if (::fdatasync(fd_) != 0) return PosixError("syncing", path_, errno);
    return Status::Ok();
  }

  Status Close() override {
    if (fd_ < 0) return Status::Ok();
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return PosixError("closing", path_, errno);
    return Status::Ok();
  }

  uint64_t Size() const override { return size_; }

 private:
  const std::string path_;
  int fd_;  // -1 once closed
  uint64_t size_;
};

class PosixFs final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> OpenAppendable(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError("opening", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      Status s = PosixError("stat of", path, errno);
      ::close(fd);
      return s;
    }
    return std::unique_ptr<WritableFile>(
        new PosixWritableFile(path, fd, static_cast<uint64_t>(st.st_size)));
  }

  Result<std::string> ReadFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("opening", path, errno);
    std::string contents;
    struct stat st;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) contents.reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    while (true) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0) {
        if (errno == EINTR) continue;
        Status s = PosixError("reading", path, errno);
        ::close(fd);
        return s;
      }
      if (n == 0) break;
      contents.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return contents;
  }

  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return PosixError("listing", dir, errno);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return PosixError("listing", dir, err);
    std::sort(names.begin(), names.end());
    return names;
  }

  Status CreateDirs(const std::string& dir) override {
    if (dir.empty()) return Status::InvalidArgument("CreateDirs: empty path");
    // Create each prefix in turn; EEXIST is fine as long as it is a directory.
    for (size_t pos = 1; pos <= dir.size(); ++pos) {
      if (pos != dir.size() && dir[pos] != '/') continue;
      std::string prefix = dir.substr(0, pos);
      if (::mkdir(prefix.c_str(), 0755) == 0) continue;
      int err = errno;
      struct stat st;
      if (err == EEXIST && ::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
      if (err == EEXIST) return Status::AlreadyExists(prefix + " exists and is not a directory");
      return PosixError("creating directory", prefix, err);
    }
    return Status::Ok();
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError("removing", path, errno);
    return Status::Ok();
  }

  Status RemoveDir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) != 0) return PosixError("removing directory", dir, errno);
    return Status::Ok();
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return PosixError("renaming", from + " to " + to, errno);
    }
    return Status::Ok();
  }

  Status Truncate(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) {
      return PosixError("truncating", path, errno);
    }
    return Status::Ok();
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError("opening directory", dir, errno);
    Status s;
    if (::fsync(fd) != 0) s = PosixError("syncing directory", dir, errno);
    ::close(fd);
    return s;
  }

  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError("stat of", path, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  bool Exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }
};

}  // namespace

FileSystem& PosixFileSystem() {
  static PosixFs* const kInstance = new PosixFs();  // never destroyed: safe during exit
  return *kInstance;
}

Status WriteFileAtomic(FileSystem& fs, const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  // OpenAppendable keeps existing content, so a leftover from an earlier failed attempt must go.
  if (fs.Exists(tmp)) TW_RETURN_IF_ERROR(fs.RemoveFile(tmp));
  {
    TW_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs.OpenAppendable(tmp));
    Status s = file->Append(contents);
    if (s.ok()) s = file->Sync();
    Status close = file->Close();
    if (s.ok()) s = close;
    if (!s.ok()) {
      (void)fs.RemoveFile(tmp);
      return s.WithContext("writing " + path);
    }
  }
  TW_RETURN_IF_ERROR(fs.RenameFile(tmp, path));
  return fs.SyncDir(ParentDir(path));
}

}  // namespace trainwatch
