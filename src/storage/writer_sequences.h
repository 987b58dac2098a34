// WriterSequences: the last applied sequence number of each writer (retried batches are applied
// once), in the store's RocksDB database (docs/format/store.md):
//   "w" writer_id -> last applied sequence (u64)
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"

namespace trainwatch::storage {

class StoreDb;

class WriterSequences {
 public:
  // `db` must outlive this object.
  explicit WriterSequences(StoreDb& db) : db_(db) {}
  WriterSequences(const WriterSequences&) = delete;
  WriterSequences& operator=(const WriterSequences&) = delete;

  Status Put(const std::string& writer_id, uint64_t sequence);
  // Start-up loading: calls fn for every writer, in key order.
  Status ForEach(const std::function<Status(std::string writer, uint64_t seq)>& fn) const;

 private:
  StoreDb& db_;
};

}  // namespace trainwatch::storage
