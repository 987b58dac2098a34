// Writing one WAL segment file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/status.h"

namespace trainwatch::storage::wal {

// Appends the segment header for a segment whose first record is `first_lsn` to `dst`.
void EncodeSegmentHeader(uint64_t first_lsn, std::string* dst);

// Appends the framing and payload of one record to `dst`. payload.size() <= kMaxRecordBytes.
void EncodeRecord(uint64_t lsn, std::string_view payload, std::string* dst);

// Builds one segment: records are framed into a buffer by Add() and reach the file with a single
// Append per Flush(), so a group of records costs one write call.
//
// Not thread-safe: one thread (WalLog's writer thread) owns it. After any error the file holds an
// unknown tail; every later Flush/Sync returns that first error.
class SegmentWriter {
 public:
  // Creates the segment file at `path` for records from `first_lsn` on. The file must not exist,
  // or be empty (a placeholder left by recovery); otherwise returns Internal. The header is
  // buffered and written by the first Flush().
  static Result<std::unique_ptr<SegmentWriter>> Create(FileSystem& fs, std::string path,
                                                       uint64_t first_lsn);
  ~SegmentWriter();
  SegmentWriter(const SegmentWriter&) = delete;
  SegmentWriter& operator=(const SegmentWriter&) = delete;

  // Buffers one record. `lsn` must be next_lsn(); payload.size() <= kMaxRecordBytes.
  void Add(uint64_t lsn, std::string_view payload);
  // Writes every buffered byte with one WritableFile::Append.
  Status Flush();
  // Flushes, then makes the file durable (fdatasync).
  Status Sync();
  // Flushes and closes the file; the writer is unusable afterwards. Does not sync.
  Status Close();

  // Size of the file once buffered bytes are flushed.
  uint64_t size() const { return flushed_ + buffer_.size(); }
  // Records added so far.
  uint64_t records() const { return next_lsn_ - first_lsn_; }
  uint64_t first_lsn() const { return first_lsn_; }
  uint64_t next_lsn() const { return next_lsn_; }
  const std::string& path() const { return path_; }

 private:
  SegmentWriter(std::string path, std::unique_ptr<WritableFile> file, uint64_t first_lsn);

  const std::string path_;
  std::unique_ptr<WritableFile> file_;
  const uint64_t first_lsn_;
  uint64_t next_lsn_;
  uint64_t flushed_ = 0;  // bytes handed to the file
  std::string buffer_;    // framed bytes not yet written
  Status error_;          // the first failure; sticky
};

}  // namespace trainwatch::storage::wal
