// Helpers shared by the fuzz targets (docs/fuzzing.md): a contract check that aborts, so that the
// fuzzer records the input, and an in-memory FileSystem for readers that take one. Harnesses that
// build well-framed inputs (valid checksums) write integers with storage/binary_io.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_system.h"

namespace trainwatch::fuzz {

// Aborts with the failed condition (a crash for libFuzzer) when a parser breaks its contract.
[[noreturn]] void ContractFailed(const char* file, int line, const char* condition, std::string_view detail);

#define FUZZ_CHECK(cond, detail)                                                      \
  do {                                                                                \
    if (!(cond)) ::trainwatch::fuzz::ContractFailed(__FILE__, __LINE__, #cond, detail); \
  } while (0)

// True if `inner` lies inside `outer` (both views of the same buffer); an empty view always does.
inline bool ViewWithin(std::string_view inner, std::string_view outer) {
  if (inner.empty()) return true;
  auto in = reinterpret_cast<uintptr_t>(inner.data());
  auto out = reinterpret_cast<uintptr_t>(outer.data());
  return in >= out && in + inner.size() <= out + outer.size();
}

// Files and directories in memory; paths are compared as strings (no normalisation). Sync and
// SyncDir do nothing. Thread-safe.
class MemFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> OpenAppendable(const std::string& path) override;
  Result<std::string> ReadFile(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override;
  Status CreateDirs(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveDir(const std::string& dir) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status Truncate(const std::string& path, uint64_t size) override;
  Status SyncDir(const std::string& dir) override { return Status::Ok(); }
  Result<uint64_t> FileSize(const std::string& path) override;
  bool Exists(const std::string& path) override;

  // Creates the file (and its parent directories) with `contents`, replacing any.
  void Put(const std::string& path, std::string_view contents);

 private:
  class File;
  static std::string Parent(const std::string& path);

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<std::string>> files_;  // GUARDED_BY(mu_)
  std::set<std::string> dirs_{"/"};                            // GUARDED_BY(mu_)
};

// Removes every TRAINWATCH_* variable from the environment (the config readers consult it).
void ClearTrainwatchEnvironment();

}  // namespace trainwatch::fuzz
