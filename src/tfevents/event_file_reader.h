// Reads one event file's records incrementally: the whole file once (import), or whatever a
// growing file gained since the last call (watch).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "tfevents/record_reader.h"

namespace trainwatch::tfevents {

// Owns an open file descriptor and a read buffer. Records come back as views into the buffer,
// valid until the next call to Fill(). Not thread-safe.
class EventFileReader {
 public:
  // Opens `path` to read from `start_offset` (a record boundary, e.g. a saved position).
  static Result<std::unique_ptr<EventFileReader>> Open(const std::string& path,
                                                       uint64_t start_offset = 0,
                                                       size_t chunk_bytes = 8u << 20);
  ~EventFileReader();
  EventFileReader(const EventFileReader&) = delete;
  EventFileReader& operator=(const EventFileReader&) = delete;

  // Reads more of the file into the buffer (at least enough for the pending record when its
  // header was read). Returns the number of new bytes: 0 means the file ends where we are (and
  // then an empty buffer's memory is given back, so that idle tailed files cost nothing).
  Result<size_t> Fill();

  // The next record or corrupt stretch in the buffered bytes; kIncomplete when Fill() must read
  // more (or the file ends inside a record, the usual case for a file being written).
  RecordResult Next();

  // File offset of the first byte not yet consumed: every record before it has been returned.
  uint64_t position() const { return buffer_offset_ + cursor_; }
  // Bytes read beyond position() (an incomplete record, when Next() says kIncomplete).
  uint64_t pending_bytes() const { return size_ - cursor_; }
  const std::string& path() const { return path_; }

 private:
  EventFileReader(std::string path, int fd, uint64_t start_offset, size_t chunk_bytes);

  std::string path_;
  int fd_;
  size_t chunk_bytes_;
  // File bytes [buffer_offset_, buffer_offset_ + size_) in buffer_[0, size_). Not a std::string:
  // growing one zero-fills, which would cost a pass over every byte read.
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t size_ = 0;
  uint64_t buffer_offset_;
  size_t cursor_ = 0;    // consumed prefix of buffer_
  uint64_t needed_ = 0;  // bytes from cursor_ the pending record needs (0: unknown)
};

}  // namespace trainwatch::tfevents
