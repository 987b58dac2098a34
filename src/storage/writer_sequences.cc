#include "storage/writer_sequences.h"

#include <rocksdb/db.h>

#include "storage/binary_io.h"
#include "storage/store_internal.h"

namespace trainwatch::storage {

using namespace store_internal;

Status WriterSequences::Put(const std::string& writer_id, uint64_t sequence) {
  std::string value;
  PutFixed64(&value, sequence);
  return db_.Put("w" + writer_id, value, "writing sequence");
}

Status WriterSequences::ForEach(const std::function<Status(std::string, uint64_t)>& fn) const {
  return ForEachPrefixed(db_, "w", [&](std::string_view key, std::string_view value) {
    uint64_t seq;
    ByteReader in(value);
    if (!in.GetFixed64(&seq)) return Status::Corruption("bad writer record");
    return fn(std::string(key.substr(1)), seq);
  });
}

}  // namespace trainwatch::storage
