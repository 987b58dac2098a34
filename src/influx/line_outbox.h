// LineOutbox: a durable FIFO of text lines (line protocol on its way to a mirror, influx_mirror.h),
// kept in a directory as numbered segment files and a cursor (docs/format/mirror_outbox.md):
//
//   <dir>/<seq, 16 digits>.lp   whole lines, each ending in '\n', appended and synced
//   <dir>/cursor                "<seq> <offset>\n": everything before it was delivered
//
// Append makes lines durable before it returns; Peek hands out whole lines from the cursor; Ack
// moves the cursor (written atomically) and deletes segments wholly before it. A crash mid-append
// leaves at most a partial last line, cut off at Open. The backlog (bytes appended and not yet
// acknowledged) is bounded: an Append past `max_bytes` is refused whole.
//
// Thread-safe: Append (one producer) and Peek/Ack (one consumer) may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/mutex.h"
#include "common/status.h"

namespace trainwatch::influx {

struct LineOutboxOptions {
  uint64_t segment_bytes = 4ull << 20;  // a segment is closed once it holds this much
  uint64_t max_bytes = 256ull << 20;    // the most backlog kept
};

class LineOutbox {
 public:
  struct Position {
    uint64_t segment = 0;
    uint64_t offset = 0;
    bool operator==(const Position&) const = default;
  };
  struct Chunk {
    std::string lines;   // whole lines; empty when nothing is waiting
    Position end;        // the position after them (what Ack takes)
    uint64_t count = 0;  // lines
  };

  // Opens (creating) `dir`; `fs` must outlive the outbox.
  static Result<std::unique_ptr<LineOutbox>> Open(FileSystem& fs, std::string dir,
                                                  LineOutboxOptions options = {});
  LineOutbox(const LineOutbox&) = delete;
  LineOutbox& operator=(const LineOutbox&) = delete;

  // Appends `lines` (whole lines, each ending in '\n') durably. ResourceExhausted when the backlog
  // would pass max_bytes (nothing is appended); a file system error otherwise.
  Status Append(std::string_view lines);
  // Up to about `max_bytes` of whole lines (at least one line if any waits) from the cursor.
  Result<Chunk> Peek(size_t max_bytes);
  // Everything before `end` (a Chunk's) was delivered: moves the cursor durably and deletes the
  // segments before it.
  Status Ack(Position end);
  // Bytes appended and not yet acknowledged.
  uint64_t backlog_bytes() const;

 private:
  LineOutbox(FileSystem& fs, std::string dir, LineOutboxOptions options)
      : fs_(fs), dir_(std::move(dir)), options_(options) {}
  Status Recover();
  std::string SegmentPath(uint64_t seq) const;
  Status OpenHead(uint64_t seq) TW_REQUIRES(mu_);

  FileSystem& fs_;
  const std::string dir_;
  const LineOutboxOptions options_;

  mutable Mutex mu_;
  std::unique_ptr<WritableFile> head_ TW_GUARDED_BY(mu_);
  uint64_t head_seq_ TW_GUARDED_BY(mu_) = 1;
  Position cursor_ TW_GUARDED_BY(mu_);
  uint64_t backlog_ TW_GUARDED_BY(mu_) = 0;
  // The consumer's cached copy of the segment it reads (segments only grow at their end).
  uint64_t cached_seq_ = 0;
  std::string cached_;
};

}  // namespace trainwatch::influx
