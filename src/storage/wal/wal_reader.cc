#include "storage/wal/wal_reader.h"

#include <string>

#include "storage/wal/wal_format.h"

namespace trainwatch::storage::wal {

Status SegmentReader::Fail(Status status) {
  error_ = std::move(status);
  return error_;
}

Result<SegmentHeader> SegmentReader::ReadHeader() {
  if (contents_.size() < kSegmentHeaderSize) {
    return Fail(Status::Corruption("segment header truncated: " + std::to_string(contents_.size()) +
                                   " of " + std::to_string(kSegmentHeaderSize) + " bytes"));
  }
  const char* p = contents_.data();
  if (std::string_view(p, kSegmentMagic.size()) != kSegmentMagic) {
    return Fail(Status::Corruption("bad segment magic"));
  }
  const uint32_t stored = UnmaskCrc(DecodeFixed32(p + 20));
  if (crc32c::Value(p, 20) != stored)
    return Fail(Status::Corruption("segment header checksum mismatch"));
  SegmentHeader header;
  header.version = DecodeFixed32(p + 8);
  header.first_lsn = DecodeFixed64(p + 12);
  if (header.version != kFormatVersion) {
    return Fail(
        Status::Corruption("unsupported segment version " + std::to_string(header.version)));
  }
  header_read_ = true;
  valid_end_ = kSegmentHeaderSize;
  next_lsn_ = header.first_lsn;
  return header;
}

Result<std::optional<RecordView>> SegmentReader::Next() {
  if (!error_.ok()) return error_;
  if (!header_read_) return Status::Internal("SegmentReader::Next before ReadHeader");
  const uint64_t offset = valid_end_;
  const uint64_t left = contents_.size() - offset;
  if (left == 0) return std::optional<RecordView>();
  const std::string at = " at offset " + std::to_string(offset);
  if (left < kRecordHeaderSize) {
    return Fail(Status::Corruption("record header truncated" + at + ": " + std::to_string(left) +
                                   " of " + std::to_string(kRecordHeaderSize) + " bytes"));
  }
  const char* p = contents_.data() + offset;
  const uint32_t length = DecodeFixed32(p);
  if (length > kMaxRecordBytes) {
    return Fail(Status::Corruption("record length " + std::to_string(length) + at +
                                   " exceeds the maximum"));
  }
  if (left - kRecordHeaderSize < length) {
    return Fail(Status::Corruption("record truncated" + at + ": payload has " +
                                   std::to_string(left - kRecordHeaderSize) + " of " +
                                   std::to_string(length) + " bytes"));
  }
  RecordView record;
  record.lsn = DecodeFixed64(p + 8);
  record.payload = std::string_view(p + kRecordHeaderSize, length);
  record.offset = offset;
  if (RecordCrc(record.lsn, record.payload) != UnmaskCrc(DecodeFixed32(p + 4))) {
    return Fail(Status::Corruption("record checksum mismatch" + at));
  }
  if (record.lsn != next_lsn_) {
    return Fail(Status::Corruption("record" + at + " has lsn " + std::to_string(record.lsn) +
                                   ", expected " + std::to_string(next_lsn_)));
  }
  valid_end_ = offset + kRecordHeaderSize + length;
  next_lsn_ = record.lsn + 1;
  return std::optional<RecordView>(record);
}

}  // namespace trainwatch::storage::wal
