// The LOG: an ordered, durable log of records, the spine every consumer reads from.
//
// The single-node implementation is the write-ahead log in wal/ (WalLog); a distributed one (NATS
// JetStream) implements the same interface.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace trainwatch::storage {

// What Replay found on its way.
struct ReplayStats {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t first_lsn = 0;   // first record replayed (0 if none)
  uint64_t last_lsn = 0;    // last record replayed (0 if none)
  uint64_t torn_tail_bytes = 0;      // bytes cut off the end of the last segment
  uint64_t corrupt_records = 0;      // records skipped for a failed check
  uint64_t lsn_gaps = 0;             // places where records that should be there are missing
  std::string report;                // human-readable account of what was cut or skipped
};

// Thread-safe.
class Log {
 public:
  // Called once per appended record with its LSN, after the record is durable, or with an error.
  using AppendCallback = std::function<void(const Status&, uint64_t lsn)>;

  virtual ~Log() = default;

  // Appends one record. Records get consecutive LSNs in the order Append is called. `done` runs
  // exactly once, on a thread the log owns, after the record is durable (fsync), and callbacks run
  // in LSN order, one at a time: a consumer may apply records inside `done` and see them in order.
  // Concurrent appends share one fsync (group commit). After Close(), `done` gets Unavailable.
  virtual void Append(std::string record, AppendCallback done) = 0;

  // Calls fn for each durable record with lsn >= from_lsn, in order. Must be called before the
  // first Append. Stops and returns fn's error if it fails.
  virtual Result<ReplayStats> Replay(
      uint64_t from_lsn, const std::function<Status(uint64_t lsn, std::string_view record)>& fn) = 0;

  // Declares that records with lsn < lsn are no longer needed; whole segments below it may go.
  virtual Status TruncateBefore(uint64_t lsn) = 0;

  // The LSN the next Append will get.
  virtual uint64_t NextLsn() const = 0;

  // Bytes the log occupies on disk.
  virtual uint64_t DiskBytes() const = 0;

  // OK while the log accepts appends; otherwise the error that stopped it (for /healthz).
  virtual Status Health() const = 0;

  // Completes pending appends, then refuses new ones.
  virtual void Close() = 0;
};

}  // namespace trainwatch::storage
