#include "storage/rocksdb_fault_injection_fs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>
#include <utility>

namespace trainwatch::storage::test {
namespace {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

// What the dead process's writes get: success, and nothing reaches the disk (see the header).
IOStatus Discarded() { return IOStatus::OK(); }

// A file created by the dead process: it takes everything and keeps nothing.
class DiscardingFile final : public rocksdb::FSWritableFile {
 public:
  IOStatus Append(const rocksdb::Slice& data, const IOOptions&, IODebugContext*) override {
    size_ += data.size();
    return IOStatus::OK();
  }
  IOStatus Append(const rocksdb::Slice& data, const IOOptions& options,
                  const rocksdb::DataVerificationInfo&, IODebugContext* dbg) override {
    return Append(data, options, dbg);
  }
  IOStatus Close(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus Flush(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus Sync(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  uint64_t GetFileSize(const IOOptions&, IODebugContext*) override { return size_; }

 private:
  uint64_t size_ = 0;
};

// Without preallocation a file's real size is what was written: PosixWritableFile's Close (also
// run by its destructor) would otherwise extend a file the crash cut back to its preallocated
// length.
rocksdb::FileOptions WithoutFallocate(const rocksdb::FileOptions& options) {
  rocksdb::FileOptions copy = options;
  copy.allow_fallocate = false;
  return copy;
}

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

// The crash works on the local disk directly: the base file system must be a local one.
std::optional<std::string> ReadPrefix(const std::string& path, uint64_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream contents;
  contents << in.rdbuf();
  std::string s = std::move(contents).str();
  if (s.size() > limit) s.resize(limit);
  return s;
}

IOStatus FromErrorCode(const std::error_code& ec, const std::string& what) {
  if (!ec) return IOStatus::OK();
  return IOStatus::IOError(what, ec.message());
}

}  // namespace

// A writable file: every append and sync goes through the owner, which checks for a crash and an
// injected error and tracks the synced length.
class FaultInjectionRocksFs::File final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  File(FaultInjectionRocksFs& fs, std::string path, uint64_t generation,
       std::unique_ptr<rocksdb::FSWritableFile> base)
      : FSWritableFileOwnerWrapper(std::move(base)),
        fs_(fs),
        path_(std::move(path)),
        generation_(generation) {}

  IOStatus Append(const rocksdb::Slice& data, const IOOptions& options,
                  IODebugContext* dbg) override {
    return fs_.FileAppend(*this, data, options, dbg);
  }
  IOStatus Append(const rocksdb::Slice& data, const IOOptions& options,
                  const rocksdb::DataVerificationInfo&, IODebugContext* dbg) override {
    return fs_.FileAppend(*this, data, options, dbg);
  }
  IOStatus PositionedAppend(const rocksdb::Slice&, uint64_t, const IOOptions&,
                            IODebugContext*) override {
    return IOStatus::NotSupported("PositionedAppend (direct I/O) in FaultInjectionRocksFs");
  }
  IOStatus PositionedAppend(const rocksdb::Slice&, uint64_t, const IOOptions&,
                            const rocksdb::DataVerificationInfo&, IODebugContext*) override {
    return IOStatus::NotSupported("PositionedAppend (direct I/O) in FaultInjectionRocksFs");
  }
  IOStatus Sync(const IOOptions& options, IODebugContext* dbg) override {
    return fs_.FileSync(*this, /*full=*/false, options, dbg);
  }
  IOStatus Fsync(const IOOptions& options, IODebugContext* dbg) override {
    return fs_.FileSync(*this, /*full=*/true, options, dbg);
  }
  IOStatus Truncate(uint64_t size, const IOOptions& options, IODebugContext* dbg) override {
    if (!fs_.Alive(generation_)) return Discarded();
    return FSWritableFileOwnerWrapper::Truncate(size, options, dbg);
  }

  const std::string& path() const { return path_; }
  uint64_t generation() const { return generation_; }

 private:
  FaultInjectionRocksFs& fs_;
  const std::string path_;
  const uint64_t generation_;
};

// A directory whose fsync makes the entries of the files in it durable.
class FaultInjectionRocksFs::Directory final : public rocksdb::FSDirectoryWrapper {
 public:
  Directory(FaultInjectionRocksFs& fs, std::string name, std::unique_ptr<rocksdb::FSDirectory> base)
      : FSDirectoryWrapper(std::move(base)),
        fs_(fs),
        name_(WithoutTrailingSlashes(std::move(name))) {}

  IOStatus Fsync(const IOOptions& options, IODebugContext* dbg) override {
    (void)options;  // recorded, not performed (see FileSync)
    (void)dbg;
    return fs_.DirSync(name_);
  }
  IOStatus FsyncWithDirOptions(const IOOptions& options, IODebugContext* dbg,
                               const rocksdb::DirFsyncOptions& dir_options) override {
    (void)options;
    (void)dbg;
    (void)dir_options;
    return fs_.DirSync(name_);
  }

 private:
  FaultInjectionRocksFs& fs_;
  const std::string name_;
};

FaultInjectionRocksFs::FaultInjectionRocksFs(std::shared_ptr<rocksdb::FileSystem> base)
    : FileSystemWrapper(std::move(base)) {}

FaultInjectionRocksFs::~FaultInjectionRocksFs() = default;

IOStatus FaultInjectionRocksFs::InjectedLocked() {
  ++refused_writes_;
  return write_error_;
}

void FaultInjectionRocksFs::TrackNewLocked(const std::string& path, bool existed, uint64_t size) {
  FileState state;
  state.synced_bytes = size;
  state.dir_entry_durable = existed;
  auto it = files_.find(path);
  if (it != files_.end() && !it->second.dir_entry_durable) {
    state.dir_entry_durable = false;  // recreated before its entry was ever synced
    state.replaced_contents = it->second.replaced_contents;
  }
  files_[path] = std::move(state);
}

std::unique_ptr<rocksdb::FSWritableFile> FaultInjectionRocksFs::Wrap(
    const std::string& path, std::unique_ptr<rocksdb::FSWritableFile> base) {
  return std::make_unique<File>(*this, path, generation_, std::move(base));
}

IOStatus FaultInjectionRocksFs::FileAppend(File& file, const rocksdb::Slice& data,
                                           const IOOptions& options, IODebugContext* dbg) {
  MutexLock lock(mu_);
  if (!AliveLocked(file.generation())) return Discarded();
  if (RefusesLocked(file.path())) {
    if (torn_appends_ && data.size() > 1) {
      (void)file.target()->Append(rocksdb::Slice(data.data(), data.size() / 2), options, dbg);
    }
    return InjectedLocked();
  }
  return file.target()->Append(data, options, dbg);
}

IOStatus FaultInjectionRocksFs::FileSync(File& file, bool full, const IOOptions& options,
                                         IODebugContext* dbg) {
  uint64_t size;
  {
    MutexLock lock(mu_);
    if (!AliveLocked(file.generation())) return Discarded();
    if (RefusesLocked(file.path())) return InjectedLocked();
    size = file.target()->GetFileSize(options, dbg);
  }
  // The sync is recorded, not performed: only Crash() decides what survives, and tests of many
  // lifetimes need not wait for the disk. (`full` — fsync rather than fdatasync — changes
  // nothing here: sizes are tracked, metadata is not.)
  (void)full;
  (void)options;
  (void)dbg;
  MutexLock lock(mu_);
  if (!AliveLocked(file.generation())) return Discarded();
  auto it = files_.find(file.path());
  if (it != files_.end()) it->second.synced_bytes = std::max(it->second.synced_bytes, size);
  return IOStatus::OK();
}

bool FaultInjectionRocksFs::Alive(uint64_t generation) const {
  MutexLock lock(mu_);
  return AliveLocked(generation);
}

IOStatus FaultInjectionRocksFs::DirSync(const std::string& dir) {
  MutexLock lock(mu_);
  if (down_) return Discarded();
  for (auto& [path, state] : files_) {
    if (ParentDir(path) == dir) {
      state.dir_entry_durable = true;
      state.replaced_contents.reset();
    }
  }
  return IOStatus::OK();
}

IOStatus FaultInjectionRocksFs::NewSequentialFile(const std::string& f,
                                                  const rocksdb::FileOptions& options,
                                                  std::unique_ptr<rocksdb::FSSequentialFile>* r,
                                                  IODebugContext* dbg) {
  return target_->NewSequentialFile(f, options, r, dbg);
}

IOStatus FaultInjectionRocksFs::NewRandomAccessFile(const std::string& f,
                                                    const rocksdb::FileOptions& options,
                                                    std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                                                    IODebugContext* dbg) {
  return target_->NewRandomAccessFile(f, options, r, dbg);
}

IOStatus FaultInjectionRocksFs::NewWritableFile(const std::string& f,
                                                const rocksdb::FileOptions& options,
                                                std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                IODebugContext* dbg) {
  MutexLock lock(mu_);
  if (down_) {
    *r = std::make_unique<DiscardingFile>();
    return Discarded();
  }
  if (RefusesLocked(f)) return InjectedLocked();
  const bool existed = target_->FileExists(f, IOOptions(), dbg).ok();
  std::unique_ptr<rocksdb::FSWritableFile> base;
  IOStatus s = target_->NewWritableFile(f, WithoutFallocate(options), &base, dbg);
  if (!s.ok()) return s;
  TrackNewLocked(f, existed, 0);  // an existing file was truncated: at once, as a removal would be
  *r = Wrap(f, std::move(base));
  return IOStatus::OK();
}

IOStatus FaultInjectionRocksFs::ReopenWritableFile(const std::string& f,
                                                   const rocksdb::FileOptions& options,
                                                   std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                   IODebugContext* dbg) {
  MutexLock lock(mu_);
  if (down_) {
    *r = std::make_unique<DiscardingFile>();
    return Discarded();
  }
  if (RefusesLocked(f)) return InjectedLocked();
  const bool existed = target_->FileExists(f, IOOptions(), dbg).ok();
  std::unique_ptr<rocksdb::FSWritableFile> base;
  IOStatus s = target_->ReopenWritableFile(f, WithoutFallocate(options), &base, dbg);
  if (!s.ok()) return s;
  if (files_.find(f) == files_.end()) {
    TrackNewLocked(f, existed, base->GetFileSize(IOOptions(), dbg));
  }
  *r = Wrap(f, std::move(base));
  return IOStatus::OK();
}

IOStatus FaultInjectionRocksFs::ReuseWritableFile(const std::string&, const std::string&,
                                                  const rocksdb::FileOptions&,
                                                  std::unique_ptr<rocksdb::FSWritableFile>*,
                                                  IODebugContext*) {
  // Only used with recycle_log_file_num, which the store leaves at 0.
  return IOStatus::NotSupported("ReuseWritableFile in FaultInjectionRocksFs");
}

IOStatus FaultInjectionRocksFs::NewRandomRWFile(const std::string& f,
                                                const rocksdb::FileOptions& options,
                                                std::unique_ptr<rocksdb::FSRandomRWFile>* r,
                                                IODebugContext* dbg) {
  {
    MutexLock lock(mu_);
    if (down_) return IOStatus::IOError("FaultInjectionRocksFs: crashed");
  }
  return target_->NewRandomRWFile(f, options, r, dbg);
}

IOStatus FaultInjectionRocksFs::NewDirectory(const std::string& name, const IOOptions& options,
                                             std::unique_ptr<rocksdb::FSDirectory>* r,
                                             IODebugContext* dbg) {
  std::unique_ptr<rocksdb::FSDirectory> base;
  IOStatus s = target_->NewDirectory(name, options, &base, dbg);
  if (!s.ok()) return s;
  *r = std::make_unique<Directory>(*this, name, std::move(base));
  return IOStatus::OK();
}

IOStatus FaultInjectionRocksFs::RenameFile(const std::string& from, const std::string& to,
                                           const IOOptions& options, IODebugContext* dbg) {
  MutexLock lock(mu_);
  if (down_) return Discarded();
  FileState moved;
  auto from_it = files_.find(from);
  if (from_it != files_.end()) {
    moved = from_it->second;
  } else {
    uint64_t size = 0;
    if (target_->GetFileSize(from, options, &size, dbg).ok()) moved.synced_bytes = size;
  }
  // What a crash before the next directory sync puts back at `to`.
  std::optional<std::string> replaced;
  auto to_it = files_.find(to);
  if (to_it != files_.end() && !to_it->second.dir_entry_durable) {
    replaced = to_it->second.replaced_contents;
  } else if (target_->FileExists(to, options, dbg).ok()) {
    uint64_t durable = to_it != files_.end() ? to_it->second.synced_bytes : UINT64_MAX;
    replaced = ReadPrefix(to, durable);
  }
  IOStatus s = target_->RenameFile(from, to, options, dbg);
  if (!s.ok()) return s;
  files_.erase(from);
  moved.dir_entry_durable = false;
  moved.replaced_contents = std::move(replaced);
  files_[to] = std::move(moved);
  return IOStatus::OK();
}

IOStatus FaultInjectionRocksFs::LinkFile(const std::string& from, const std::string& to,
                                         const IOOptions& options, IODebugContext* dbg) {
  MutexLock lock(mu_);
  if (down_) return Discarded();
  IOStatus s = target_->LinkFile(from, to, options, dbg);
  if (!s.ok()) return s;
  auto from_it = files_.find(from);
  uint64_t size = 0;
  if (from_it != files_.end()) {
    size = from_it->second.synced_bytes;
  } else {
    (void)target_->GetFileSize(to, options, &size, dbg);
  }
  TrackNewLocked(to, /*existed=*/false, size);
  return IOStatus::OK();
}

IOStatus FaultInjectionRocksFs::DeleteFile(const std::string& f, const IOOptions& options,
                                           IODebugContext* dbg) {
  MutexLock lock(mu_);
  if (down_) return Discarded();
  IOStatus s = target_->DeleteFile(f, options, dbg);
  if (s.ok()) files_.erase(f);
  return s;
}

IOStatus FaultInjectionRocksFs::Truncate(const std::string& f, size_t size,
                                         const IOOptions& options, IODebugContext* dbg) {
  MutexLock lock(mu_);
  if (down_) return Discarded();
  IOStatus s = target_->Truncate(f, size, options, dbg);
  auto it = files_.find(f);
  if (s.ok() && it != files_.end()) {
    it->second.synced_bytes = std::min<uint64_t>(it->second.synced_bytes, size);
  }
  return s;
}

IOStatus FaultInjectionRocksFs::CreateDir(const std::string& d, const IOOptions& options,
                                          IODebugContext* dbg) {
  {
    MutexLock lock(mu_);
    if (down_) return Discarded();
  }
  return target_->CreateDir(d, options, dbg);
}

IOStatus FaultInjectionRocksFs::CreateDirIfMissing(const std::string& d, const IOOptions& options,
                                                   IODebugContext* dbg) {
  {
    MutexLock lock(mu_);
    if (down_) return Discarded();
  }
  return target_->CreateDirIfMissing(d, options, dbg);
}

IOStatus FaultInjectionRocksFs::GetChildren(const std::string& dir, const IOOptions& options,
                                            std::vector<std::string>* r, IODebugContext* dbg) {
  return target_->GetChildren(dir, options, r, dbg);
}

IOStatus FaultInjectionRocksFs::FileExists(const std::string& f, const IOOptions& options,
                                           IODebugContext* dbg) {
  return target_->FileExists(f, options, dbg);
}

IOStatus FaultInjectionRocksFs::Crash() { return CrashImpl(std::nullopt); }

IOStatus FaultInjectionRocksFs::CrashWithTornWrites(uint64_t seed) { return CrashImpl(seed); }

IOStatus FaultInjectionRocksFs::CrashImpl(std::optional<uint64_t> torn_writes_seed) {
  MutexLock lock(mu_);
  down_ = true;
  ++generation_;
  std::mt19937_64 rng(torn_writes_seed.value_or(0));
  IOStatus result;
  for (const auto& [path, state] : files_) {  // std::map: a fixed order, for determinism
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) continue;  // removed meanwhile
    uint64_t keep = std::min(size, state.synced_bytes);
    bool lost = !state.dir_entry_durable;
    if (torn_writes_seed) {
      keep += rng() % (size - keep + 1);
      if (lost) lost = rng() % 2 == 0;
    }
    IOStatus s;
    if (lost && state.replaced_contents) {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << *state.replaced_contents;
      if (!out.flush()) s = IOStatus::IOError("restoring " + path);
    } else if (lost) {
      std::filesystem::remove(path, ec);
      s = FromErrorCode(ec, "removing " + path);
    } else if (keep < size) {
      std::filesystem::resize_file(path, keep, ec);
      s = FromErrorCode(ec, "truncating " + path);
    }
    if (result.ok() && !s.ok()) result = s;
  }
  files_.clear();
  return result;
}

void FaultInjectionRocksFs::Restart() {
  MutexLock lock(mu_);
  down_ = false;
}

void FaultInjectionRocksFs::SetWriteError(IOStatus error, std::string only_suffix,
                                          bool torn_appends) {
  MutexLock lock(mu_);
  write_error_ = std::move(error);
  write_error_suffix_ = std::move(only_suffix);
  torn_appends_ = torn_appends;
}

bool FaultInjectionRocksFs::RefusesLocked(const std::string& path) const {
  return !write_error_.ok() && path.size() >= write_error_suffix_.size() &&
         path.compare(path.size() - write_error_suffix_.size(), std::string::npos,
                      write_error_suffix_) == 0;
}

uint64_t FaultInjectionRocksFs::RefusedWrites() const {
  MutexLock lock(mu_);
  return refused_writes_;
}

}  // namespace trainwatch::storage::test
