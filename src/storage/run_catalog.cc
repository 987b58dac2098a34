#include "storage/run_catalog.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "storage/store_internal.h"

namespace trainwatch::storage {

using namespace store_internal;

Status RunCatalog::PutRun(const std::string& project, const std::string& run,
                          const std::string& json) {
  return FromRocks(db_.Put(rocksdb::WriteOptions(), RunKeyOf('r', project, run), json),
                   "writing run metadata");
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
  return FromRocks(db_.Put(rocksdb::WriteOptions(), RunKeyOf('g', project, run),
                           rocksdb::Slice(json.data(), json.size())),
                   "writing graph");
}

Result<std::string> RunCatalog::GetGraph(const std::string& project, const std::string& run) const {
  std::string value;
  bool found;
  TW_RETURN_IF_ERROR(GetValue(db_, RunKeyOf('g', project, run), &value, &found, "reading graph"));
  if (!found) return Status::NotFound("run '" + run + "' has no graph");
  return value;
}

void RunCatalog::AddRunDeletion(const std::string& project, const std::string& run,
                                rocksdb::WriteBatch* batch) const {
  batch->Delete(RunKeyOf('g', project, run));
  batch->Delete(RunKeyOf('r', project, run));
}

}  // namespace trainwatch::storage
