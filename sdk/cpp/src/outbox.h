// Outbox: every batch cut but not yet acknowledged, in sequence order — in memory while the server
// keeps up, in the spool while it is unreachable, slow, or the client is offline.
//
// Invariant: every batch in memory that did not come from the spool has a lower sequence than every
// batch in a spool segment not yet loaded. Push keeps it (a batch goes to the spool while the spool
// holds unloaded segments); NextUnsent keeps it (it loads the oldest segment only when memory has
// nothing left to send). So sending in NextUnsent order is sending in sequence order, which the
// server's exactly-once rule (apply a writer's sequence only if it is higher than the last
// applied) requires.
//
// Thread-safe: the batcher pushes, the sender takes and acknowledges.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "common/status.h"
#include "spool.h"

namespace trainwatch::sdk {

struct OutboxBatch {
  uint64_t sequence = 0;
  uint32_t points = 0;
  std::shared_ptr<const std::string> bytes;  // the serialised WriteRequest
};

class Outbox {
 public:
  // `spool` must outlive the outbox; without one (no writable directory) batches beyond
  // memory_max_bytes are refused.
  Outbox(Spool* spool, uint64_t memory_max_bytes);
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Queues a batch: in memory, or in the spool when `to_spool`, when the spool already holds
  // unsent batches, or when memory is full. `*spooled` says which; `*dropped_points` counts points
  // of old spool segments dropped to make room.
  Status Push(OutboxBatch batch, bool to_spool, bool* spooled, uint64_t* dropped_points);
  // The oldest batch not yet handed out since the last Rewind, loading the spool's oldest segment
  // when memory has none left. nullopt when there is nothing to send (or the spool cannot be read:
  // `*error` says why).
  std::optional<OutboxBatch> NextUnsent(Status* error);
  // The oldest unacknowledged batch was acknowledged; `sequence` must be its sequence (else false
  // and nothing changes).
  bool Ack(uint64_t sequence);
  // Every unacknowledged batch is to be sent again (a new connection).
  void Rewind();

  bool Empty() const;  // nothing unacknowledged in memory or spool
  uint64_t memory_bytes() const;
  size_t in_memory() const;
  // Writes every batch held only in memory to the spool (closing the client with the server away).
  Status SpillMemory();

 private:
  struct Held {
    OutboxBatch batch;
    std::optional<uint64_t> segment;  // the spool segment it was loaded from
  };

  Spool* const spool_;  // may be null
  const uint64_t memory_max_bytes_;
  mutable Mutex mu_;
  std::deque<Held> held_ TW_GUARDED_BY(mu_);  // by sequence
  size_t unsent_ TW_GUARDED_BY(mu_) = 0;      // held_[unsent_..] not handed out
  uint64_t memory_bytes_ TW_GUARDED_BY(mu_) = 0;
  // Loaded segment -> its batches not yet acknowledged.
  std::map<uint64_t, size_t> segment_remaining_ TW_GUARDED_BY(mu_);
};

}  // namespace trainwatch::sdk
