// TFRecord framing, read without copying (the format: docs/tensorboard.md#the-file-format).
//
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked
//   CRC-32C of data
//
// ReadRecord looks at the bytes at one position and tells apart the four cases a reader of a file
// that may still be written needs: a complete record; an incomplete tail (the writer has not
// finished it: wait for more bytes); a corrupt record whose length was trustworthy (its data CRC
// failed: skip exactly that record); and a corrupt header (the length cannot be trusted: scan
// forward for the next position holding a header with a valid CRC and skip to it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainwatch::tfevents {

constexpr size_t kRecordHeaderBytes = 12;  // length + its CRC
constexpr size_t kRecordFooterBytes = 4;   // the data's CRC
// A length CRC can match by chance (1 in 2^32 positions) while resynchronising; refusing lengths
// above this limit makes such a false header much less likely to swallow good records. Real event
// records (scalars, histograms, images, graphs) stay far below it.
constexpr uint64_t kDefaultMaxRecordBytes = 1ull << 30;

enum class RecordStatus {
  kRecord,      // `data` is a complete record whose CRCs match
  kIncomplete,  // the bytes end inside this record: nothing consumed; read more and call again
  kCorrupt,     // `consumed` bytes from `offset` are not a valid record and are skipped
};

struct RecordResult {
  RecordStatus status = RecordStatus::kIncomplete;
  uint64_t offset = 0;    // file offset where this record (or the skipped bytes) begins
  uint64_t consumed = 0;  // bytes to advance past (0 for kIncomplete)
  std::string_view data;  // kRecord: a view into the caller's bytes
  // kIncomplete: the bytes needed from `offset` to finish the record when its header is already
  // valid (else kRecordHeaderBytes). kCorrupt: 0.
  uint64_t needed = 0;
  const char* reason = "";  // kCorrupt: "data checksum mismatch", "length checksum mismatch", ...
};

// Decodes the record starting at bytes[0], which lies at file offset `offset`. Never reads past
// bytes.size(). A corrupt header is skipped up to the next position that starts a header with a
// valid length CRC (and a length <= max_record_bytes); when no such position exists before the
// last 11 bytes, everything up to them is skipped (they may be the start of a record still being
// written).
RecordResult ReadRecord(std::string_view bytes, uint64_t offset,
                        uint64_t max_record_bytes = kDefaultMaxRecordBytes);

// "file:offset: why (N bytes skipped)" for a kCorrupt result.
std::string DescribeCorruption(std::string_view file, const RecordResult& r);

// Iterates over the records of a buffer that holds a file's bytes from `base_offset` on.
// Not thread-safe; the buffer must outlive the reader and the views it returns.
class RecordReader {
 public:
  explicit RecordReader(std::string_view buffer, uint64_t base_offset = 0,
                        uint64_t max_record_bytes = kDefaultMaxRecordBytes)
      : buffer_(buffer), base_(base_offset), max_record_bytes_(max_record_bytes) {}

  // The next record or corrupt stretch; kIncomplete at the end of the buffer (also when it ends
  // exactly at a record boundary: then `needed` is kRecordHeaderBytes and at_end() is true).
  RecordResult Next() {
    RecordResult r = ReadRecord(buffer_.substr(pos_), base_ + pos_, max_record_bytes_);
    pos_ += r.consumed;
    return r;
  }
  // File offset of the first byte not yet consumed.
  uint64_t position() const { return base_ + pos_; }
  bool at_end() const { return pos_ == buffer_.size(); }

 private:
  std::string_view buffer_;
  uint64_t base_;
  uint64_t max_record_bytes_;
  size_t pos_ = 0;
};

}  // namespace trainwatch::tfevents
