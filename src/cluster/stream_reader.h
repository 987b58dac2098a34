// Reads one subject of a stream in order from a given sequence: how a node applies the
// partitions it owns, and how a node taking a partition over replays the tail after the state it
// restored (docs/cluster.md). The position is the reader's own (the last sequence returned), not
// a durable consumer's: the owner's store records what it applied, so a new owner starts from
// its own checkpoint and nothing on the server has to move with the partition.
#pragma once

#include <nats/nats.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/jetstream.h"
#include "common/status.h"

namespace trainwatch::cluster {

struct StreamMessage {
  uint64_t sequence = 0;  // in the stream
  std::string subject;
  std::string msg_id;  // the publisher's de-duplication id ("" if none)
  std::string data;
};

class StreamReader {
 public:
  // Reads `subject` of `stream` from the message after `after_sequence` (0: from the start).
  static Result<std::unique_ptr<StreamReader>> Open(JetStream& js, std::string stream,
                                                    std::string subject, uint64_t after_sequence);
  ~StreamReader();
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  // Up to `max` messages after the last one returned, in stream order, waiting up to `wait_ms`
  // for the first; empty when none came. Unavailable when the server holding the reader's
  // consumer is gone or unreachable: the next call starts a new consumer at the same position,
  // so nothing is skipped or returned twice.
  Result<std::vector<StreamMessage>> Next(int max, int64_t wait_ms);

  // The sequence of the last message returned (`after_sequence` before the first).
  uint64_t last_sequence() const { return last_sequence_; }

 private:
  StreamReader(JetStream& js, std::string stream, std::string subject, uint64_t after)
      : js_(js), stream_(std::move(stream)), subject_(std::move(subject)), last_sequence_(after) {}
  Status Subscribe();
  void Unsubscribe();

  JetStream& js_;
  const std::string stream_;
  const std::string subject_;
  uint64_t last_sequence_;
  natsSubscription* subscription_ = nullptr;
};

}  // namespace trainwatch::cluster
