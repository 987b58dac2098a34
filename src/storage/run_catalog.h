// RunCatalog: each run's metadata record and model graph, in the store's RocksDB database
// (docs/format/store.md):
//   "r" project "\0" run -> run metadata (JSON, run_info.h)
//   "g" project "\0" run -> the run's model graph (JSON)
//   "k" project "\0" run "\0" rank (u32 BE) -> one rank of a distributed run (JSON, RankState)
// Thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace rocksdb {
class WriteBatch;
}  // namespace rocksdb

namespace trainwatch::storage {

class StoreDb;

class RunCatalog {
 public:
  // `db` must outlive this object.
  explicit RunCatalog(StoreDb& db) : db_(db) {}
  RunCatalog(const RunCatalog&) = delete;
  RunCatalog& operator=(const RunCatalog&) = delete;

  Status PutRun(const std::string& project, const std::string& run, const std::string& json);
  // Start-up loading: calls fn for every run record, in key order.
  Status ForEachRun(const std::function<Status(std::string project, std::string run,
                                               std::string json)>& fn) const;

  Status PutGraph(const std::string& project, const std::string& run, std::string_view json);
  // NotFound if the run has no graph.
  Result<std::string> GetGraph(const std::string& project, const std::string& run) const;

  Status PutRank(const std::string& project, const std::string& run, uint32_t rank,
                 const std::string& json);
  // Start-up loading: calls fn for every rank record, in key order (by run, then rank).
  Status ForEachRank(const std::function<Status(std::string project, std::string run, uint32_t rank,
                                                std::string json)>& fn) const;

  // Adds the deletion of a run's record, graph and rank records to `batch`.
  void AddRunDeletion(const std::string& project, const std::string& run,
                      rocksdb::WriteBatch* batch) const;

 private:
  StoreDb& db_;
};

}  // namespace trainwatch::storage
