#include "common/testing/fault_injection_fs.h"

#include <algorithm>
#include <random>
#include <utility>

namespace trainwatch::test {
namespace {

Status Down() { return Status::IoError("file system crashed (FaultInjectionFileSystem)"); }

// The directory that holds `path`, as SyncDir would be called for it.
std::string ParentDir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string WithoutTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

// A file handed out by OpenAppendable. Every call goes through the owning file system's lock, so
// that Crash() sees each Append/Sync either entirely before or entirely after it.
class FaultInjectionFileSystem::File final : public WritableFile {
 public:
  File(FaultInjectionFileSystem& fs, std::string path, uint64_t generation,
       std::unique_ptr<WritableFile> base)
      : fs_(fs), path_(std::move(path)), generation_(generation), base_(std::move(base)) {}
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  Status Append(std::string_view data) override { return fs_.FileAppend(*this, data); }
  Status Sync() override { return fs_.FileSync(*this); }
  Status Close() override { return fs_.FileClose(*this); }
  uint64_t Size() const override { return base_->Size(); }

  const std::string& path() const { return path_; }
  uint64_t generation() const { return generation_; }
  WritableFile& base() const { return *base_; }

 private:
  FaultInjectionFileSystem& fs_;
  const std::string path_;
  const uint64_t generation_;
  const std::unique_ptr<WritableFile> base_;
};

FaultInjectionFileSystem::FaultInjectionFileSystem(FileSystem& base, Syncs syncs)
    : base_(base), syncs_(syncs) {}

FaultInjectionFileSystem::~FaultInjectionFileSystem() = default;

bool FaultInjectionFileSystem::AliveLocked(uint64_t generation) const {
  return !down_ && generation == generation_;
}

Status FaultInjectionFileSystem::FileAppend(const File& file, std::string_view data) {
  MutexLock lock(mu_);
  if (!AliveLocked(file.generation())) return Down();
  if (!write_error_.ok()) {
    if (failed_append_ == FailedAppend::kHalfWritten) {
      TW_RETURN_IF_ERROR(file.base().Append(data.substr(0, data.size() / 2)));
    }
    return write_error_;
  }
  return file.base().Append(data);
}

Status FaultInjectionFileSystem::FileSync(const File& file) {
  uint64_t size;
  {
    MutexLock lock(mu_);
    if (!AliveLocked(file.generation())) return Down();
    if (!write_error_.ok()) return write_error_;
    size = file.base().Size();
  }
  // Not under the lock: a crash may strike while the sync is in flight, which then counts as
  // not having completed. Appends to this file cannot run meanwhile (WritableFile is used by
  // one thread), so `size` is what the sync covers.
  if (syncs_ == Syncs::kPerformed) TW_RETURN_IF_ERROR(file.base().Sync());
  MutexLock lock(mu_);
  if (!AliveLocked(file.generation())) return Down();
  auto it = files_.find(file.path());
  if (it != files_.end()) it->second.synced_bytes = std::max(it->second.synced_bytes, size);
  return Status::Ok();
}

Status FaultInjectionFileSystem::FileClose(const File& file) {
  MutexLock lock(mu_);
  Status s = file.base().Close();  // releases the descriptor even for a dead file
  if (!AliveLocked(file.generation())) return Down();
  return s;
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::OpenAppendable(
    const std::string& path) {
  MutexLock lock(mu_);
  if (down_) return Down();
  const bool existed = base_.Exists(path);
  TW_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> base_file, base_.OpenAppendable(path));
  if (files_.find(path) == files_.end()) {
    FileState state;
    state.synced_bytes = existed ? base_file->Size() : 0;
    state.dir_entry_durable = existed;
    files_.emplace(path, state);
  }
  return std::unique_ptr<WritableFile>(new File(*this, path, generation_, std::move(base_file)));
}

Result<std::string> FaultInjectionFileSystem::ReadFile(const std::string& path) {
  MutexLock lock(mu_);
  if (down_) return Down();
  return base_.ReadFile(path);
}

Result<std::vector<std::string>> FaultInjectionFileSystem::ListDir(const std::string& dir) {
  MutexLock lock(mu_);
  if (down_) return Down();
  return base_.ListDir(dir);
}

Status FaultInjectionFileSystem::CreateDirs(const std::string& dir) {
  MutexLock lock(mu_);
  if (down_) return Down();
  return base_.CreateDirs(dir);
}

Status FaultInjectionFileSystem::RemoveFile(const std::string& path) {
  MutexLock lock(mu_);
  if (down_) return Down();
  TW_RETURN_IF_ERROR(base_.RemoveFile(path));
  files_.erase(path);
  return Status::Ok();
}

Status FaultInjectionFileSystem::RemoveDir(const std::string& dir) {
  MutexLock lock(mu_);
  if (down_) return Down();
  return base_.RemoveDir(dir);
}

Status FaultInjectionFileSystem::RenameFile(const std::string& from, const std::string& to) {
  MutexLock lock(mu_);
  if (down_) return Down();
  TW_RETURN_IF_ERROR(base_.RenameFile(from, to));
  auto it = files_.find(from);
  if (it == files_.end()) {
    files_.erase(to);  // `to` now holds an untracked, hence durable, file
  } else {
    FileState state = it->second;
    files_.erase(it);
    files_[to] = state;
  }
  return Status::Ok();
}

Status FaultInjectionFileSystem::Truncate(const std::string& path, uint64_t size) {
  MutexLock lock(mu_);
  if (down_) return Down();
  TW_RETURN_IF_ERROR(base_.Truncate(path, size));
  auto it = files_.find(path);
  if (it != files_.end() && it->second.synced_bytes > size) it->second.synced_bytes = size;
  return Status::Ok();
}

Status FaultInjectionFileSystem::SyncDir(const std::string& dir) {
  MutexLock lock(mu_);
  if (down_) return Down();
  if (!sync_dir_error_.ok()) return sync_dir_error_;
  if (syncs_ == Syncs::kPerformed) TW_RETURN_IF_ERROR(base_.SyncDir(dir));
  const std::string normalized = WithoutTrailingSlashes(dir);
  for (auto& [path, state] : files_) {
    if (ParentDir(path) == normalized) state.dir_entry_durable = true;
  }
  return Status::Ok();
}

Result<uint64_t> FaultInjectionFileSystem::FileSize(const std::string& path) {
  MutexLock lock(mu_);
  if (down_) return Down();
  return base_.FileSize(path);
}

bool FaultInjectionFileSystem::Exists(const std::string& path) {
  MutexLock lock(mu_);
  return !down_ && base_.Exists(path);
}

Status FaultInjectionFileSystem::Crash() { return CrashImpl(std::nullopt); }

Status FaultInjectionFileSystem::CrashWithTornWrites(uint64_t seed) { return CrashImpl(seed); }

Status FaultInjectionFileSystem::CrashImpl(std::optional<uint64_t> torn_writes_seed) {
  MutexLock lock(mu_);
  down_ = true;
  ++generation_;
  std::mt19937_64 rng(torn_writes_seed.value_or(0));
  Status result;
  for (const auto& [path, state] : files_) {  // std::map: a fixed order, for determinism
    Status s;
    Result<uint64_t> size = base_.FileSize(path);
    if (!size.ok()) {
      s = size.status().code() == StatusCode::kNotFound ? Status::Ok() : size.status();
    } else {
      uint64_t keep = std::min(*size, state.synced_bytes);
      bool remove = !state.dir_entry_durable;
      if (torn_writes_seed) {
        keep += rng() % (*size - keep + 1);
        if (remove) remove = rng() % 2 == 0;
      }
      if (remove) {
        s = base_.RemoveFile(path);
      } else if (keep < *size) {
        s = base_.Truncate(path, keep);
      }
    }
    if (result.ok() && !s.ok()) result = s.WithContext("FaultInjectionFileSystem::Crash");
  }
  files_.clear();
  return result;
}

void FaultInjectionFileSystem::Restart() {
  MutexLock lock(mu_);
  down_ = false;
}

void FaultInjectionFileSystem::SetWriteError(Status error, FailedAppend failed_append) {
  MutexLock lock(mu_);
  write_error_ = std::move(error);
  failed_append_ = failed_append;
}

void FaultInjectionFileSystem::SetSyncDirError(Status error) {
  MutexLock lock(mu_);
  sync_dir_error_ = std::move(error);
}

int64_t FaultInjectionFileSystem::SyncedBytes(const std::string& path) const {
  MutexLock lock(mu_);
  auto it = files_.find(path);
  return it == files_.end() ? -1 : static_cast<int64_t>(it->second.synced_bytes);
}

}  // namespace trainwatch::test
