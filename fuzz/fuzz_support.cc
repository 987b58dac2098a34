#include "fuzz/fuzz_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace trainwatch::fuzz {

void ContractFailed(const char* file, int line, const char* condition, std::string_view detail) {
  std::fprintf(stderr, "%s:%d: contract broken: %s\n  %.*s\n", file, line, condition,
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void ClearTrainwatchEnvironment() {
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.starts_with("TRAINWATCH_")) names.emplace_back(entry.substr(0, entry.find('=')));
  }
  for (const std::string& name : names) unsetenv(name.c_str());
}

class MemFileSystem::File final : public WritableFile {
 public:
  explicit File(std::shared_ptr<std::string> data) : data_(std::move(data)) {}
  Status Append(std::string_view data) override {
    data_->append(data);
    return Status::Ok();
  }
  Status Sync() override { return Status::Ok(); }
  Status Close() override { return Status::Ok(); }
  uint64_t Size() const override { return data_->size(); }

 private:
  std::shared_ptr<std::string> data_;  // shared with the file system's entry
};

std::string MemFileSystem::Parent(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

Result<std::unique_ptr<WritableFile>> MemFileSystem::OpenAppendable(const std::string& path) {
  std::lock_guard lock(mu_);
  if (!dirs_.count(Parent(path))) return Status::NotFound(path + ": no such directory");
  auto& data = files_[path];
  if (!data) data = std::make_shared<std::string>();
  return std::unique_ptr<WritableFile>(std::make_unique<File>(data));
}

Result<std::string> MemFileSystem::ReadFile(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return Status::NotFound(path + ": no such file");
  return *it->second;
}

Result<std::vector<std::string>> MemFileSystem::ListDir(const std::string& dir) {
  std::lock_guard lock(mu_);
  if (!dirs_.count(dir)) return Status::NotFound(dir + ": no such directory");
  std::set<std::string> names;
  auto child = [&](const std::string& path) {
    if (path != dir && Parent(path) == dir) names.insert(path.substr(dir == "/" ? 1 : dir.size() + 1));
  };
  for (const auto& [path, data] : files_) child(path);
  for (const std::string& path : dirs_) child(path);
  return std::vector<std::string>(names.begin(), names.end());
}

Status MemFileSystem::CreateDirs(const std::string& dir) {
  std::lock_guard lock(mu_);
  for (std::string d = dir; !d.empty() && d != "." && !dirs_.count(d); d = Parent(d)) {
    if (files_.count(d)) return Status::IoError(d + ": is a file");
    dirs_.insert(d);
  }
  return Status::Ok();
}

Status MemFileSystem::RemoveFile(const std::string& path) {
  std::lock_guard lock(mu_);
  if (files_.erase(path) == 0) return Status::NotFound(path + ": no such file");
  return Status::Ok();
}

Status MemFileSystem::RemoveDir(const std::string& dir) {
  std::lock_guard lock(mu_);
  if (!dirs_.count(dir)) return Status::NotFound(dir + ": no such directory");
  for (const auto& [path, data] : files_) {
    if (Parent(path) == dir) return Status::IoError(dir + ": directory not empty");
  }
  for (const std::string& d : dirs_) {
    if (d != dir && Parent(d) == dir) return Status::IoError(dir + ": directory not empty");
  }
  dirs_.erase(dir);
  return Status::Ok();
}

Status MemFileSystem::RenameFile(const std::string& from, const std::string& to) {
  std::lock_guard lock(mu_);
  auto it = files_.find(from);
  if (it == files_.end()) return Status::NotFound(from + ": no such file");
  if (!dirs_.count(Parent(to))) return Status::NotFound(to + ": no such directory");
  std::shared_ptr<std::string> data = it->second;
  files_.erase(it);
  files_[to] = std::move(data);
  return Status::Ok();
}

Status MemFileSystem::Truncate(const std::string& path, uint64_t size) {
  std::lock_guard lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return Status::NotFound(path + ": no such file");
  it->second->resize(size);
  return Status::Ok();
}

Result<uint64_t> MemFileSystem::FileSize(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return Status::NotFound(path + ": no such file");
  return static_cast<uint64_t>(it->second->size());
}

bool MemFileSystem::Exists(const std::string& path) {
  std::lock_guard lock(mu_);
  return files_.count(path) || dirs_.count(path);
}

void MemFileSystem::Put(const std::string& path, std::string_view contents) {
  (void)CreateDirs(Parent(path));
  std::lock_guard lock(mu_);
  files_[path] = std::make_shared<std::string>(contents);
}

}  // namespace trainwatch::fuzz
