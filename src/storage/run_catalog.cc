#include "storage/run_catalog.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "storage/store_internal.h"

namespace trainwatch::storage {

using namespace store_internal;

Status RunCatalog::PutRun(const std::string& project, const std::string& run,
                          const std::string& json) {
  return db_.Put(RunKeyOf('r', project, run), json, "writing run metadata");
}

Status RunCatalog::ForEachRun(
    const std::function<Status(std::string, std::string, std::string)>& fn) const {
  return ForEachPrefixed(db_, "r", [&](std::string_view key, std::string_view value) {
    key.remove_prefix(1);
    size_t nul = key.find('\0');
    if (nul == std::string_view::npos) return Status::Corruption("bad run key");
    return fn(std::string(key.substr(0, nul)), std::string(key.substr(nul + 1)),
              std::string(value));
  });
}

Status RunCatalog::PutGraph(const std::string& project, const std::string& run,
                            std::string_view json) {
  return db_.Put(RunKeyOf('g', project, run), json, "writing graph");
}

Result<std::string> RunCatalog::GetGraph(const std::string& project, const std::string& run) const {
  std::string value;
  bool found;
  TW_RETURN_IF_ERROR(GetValue(db_, RunKeyOf('g', project, run), &value, &found, "reading graph"));
  if (!found) return Status::NotFound("run '" + run + "' has no graph");
  return value;
}

namespace {

std::string RankKeyOf(const std::string& project, const std::string& run, uint32_t rank) {
  std::string k = RunKeyOf('k', project, run);
  k.push_back('\0');
  char be[4] = {static_cast<char>(rank >> 24), static_cast<char>(rank >> 16),
                static_cast<char>(rank >> 8), static_cast<char>(rank)};
  k.append(be, 4);
  return k;
}

}  // namespace

Status RunCatalog::PutRank(const std::string& project, const std::string& run, uint32_t rank,
                           const std::string& json) {
  return db_.Put(RankKeyOf(project, run, rank), json, "writing rank record");
}

Status RunCatalog::ForEachRank(
    const std::function<Status(std::string, std::string, uint32_t, std::string)>& fn) const {
  return ForEachPrefixed(db_, "k", [&](std::string_view key, std::string_view value) {
    key.remove_prefix(1);
    size_t nul = key.find('\0');
    if (nul == std::string_view::npos || key.size() < nul + 6 || key[key.size() - 5] != '\0')
      return Status::Corruption("bad rank key");
    std::string_view be = key.substr(key.size() - 4);
    uint32_t rank = 0;
    for (char c : be) rank = (rank << 8) | static_cast<uint8_t>(c);
    return fn(std::string(key.substr(0, nul)),
              std::string(key.substr(nul + 1, key.size() - 5 - (nul + 1))), rank,
              std::string(value));
  });
}

void RunCatalog::AddRunDeletion(const std::string& project, const std::string& run,
                                rocksdb::WriteBatch* batch) const {
  batch->Delete(RunKeyOf('g', project, run));
  batch->Delete(RunKeyOf('r', project, run));
  auto [from, to] = RunRangeOf('k', project, run);
  batch->DeleteRange(from, to);
}

}  // namespace trainwatch::storage
