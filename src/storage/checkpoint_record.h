// CheckpointRecord: the store's checkpoint LSN — every write-ahead log record below it is fully
// reflected in the store — in the store's RocksDB database (docs/format/store.md):
//   "m" -> checkpoint LSN (u64)
// Thread-safe.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace trainwatch::storage {

class StoreDb;

class CheckpointRecord {
 public:
  // `db` must outlive this object.
  explicit CheckpointRecord(StoreDb& db) : db_(db) {}
  CheckpointRecord(const CheckpointRecord&) = delete;
  CheckpointRecord& operator=(const CheckpointRecord&) = delete;

  // Writes the LSN, synced: the log may drop what lies below it once this returns OK.
  Status Put(uint64_t lsn);
  // 0 when no checkpoint was ever written.
  Result<uint64_t> Get() const;

 private:
  StoreDb& db_;
};

}  // namespace trainwatch::storage
