#include "storage/checkpoint_record.h"

#include <rocksdb/db.h>

#include "storage/binary_io.h"
#include "storage/store_internal.h"

namespace trainwatch::storage {

using namespace store_internal;

Status CheckpointRecord::Put(uint64_t lsn) {
  std::string value;
  PutFixed64(&value, lsn);
  return db_.Put("m", value, "writing checkpoint", /*sync=*/true);
}

Result<uint64_t> CheckpointRecord::Get() const {
  std::string value;
  bool found;
  TW_RETURN_IF_ERROR(GetValue(db_, "m", &value, &found, "reading checkpoint"));
  if (!found) return uint64_t{0};
  uint64_t lsn;
  ByteReader in(value);
  if (!in.GetFixed64(&lsn)) return Status::Corruption("bad checkpoint record");
  return lsn;
}

}  // namespace trainwatch::storage
