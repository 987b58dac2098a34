// Reading one WAL segment, with every check the format allows.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/status.h"

namespace trainwatch::storage::wal {

struct SegmentHeader {
  uint32_t version = 0;
  uint64_t first_lsn = 0;
};

// One record as found in a segment. `payload` points into the reader's `contents`.
struct RecordView {
  uint64_t lsn = 0;
  std::string_view payload;
  uint64_t offset = 0;  // where the record's framing starts in the segment
};

// Decodes the bytes of one segment file: the header, then records until the end of the data or
// the first record that fails a check (short framing or payload, length over kMaxRecordBytes,
// checksum mismatch, an LSN that does not follow the previous one). Nothing after a bad record can
// be trusted, since its length field is what locates the next one, so the reader stops there.
//
// Not thread-safe. `contents` must outlive the reader and every RecordView it returns.
class SegmentReader {
 public:
  explicit SegmentReader(std::string_view contents) : contents_(contents) {}
  SegmentReader(const SegmentReader&) = delete;
  SegmentReader& operator=(const SegmentReader&) = delete;

  // Decodes and checks the header; call once, before Next(). Returns Corruption (saying why) for
  // short data, a wrong magic, an unknown version or a checksum mismatch.
  Result<SegmentHeader> ReadHeader();

  // The next record; nullopt at the end of the data. Returns Corruption naming the offset and the
  // failed check for a bad record, and again on every later call.
  Result<std::optional<RecordView>> Next();

  // The offset just past the last good record (just past the header once it was read, 0 before):
  // where a torn or corrupt tail begins.
  uint64_t valid_end() const { return valid_end_; }

 private:
  Status Fail(Status status);

  const std::string_view contents_;
  uint64_t valid_end_ = 0;
  uint64_t next_lsn_ = 0;  // the LSN the next record must carry
  bool header_read_ = false;
  Status error_;  // sticky after the first bad record
};

}  // namespace trainwatch::storage::wal
