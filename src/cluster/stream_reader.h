// Reads one subject of a stream in order from a given sequence: how a node applies the stream to
// its store (docs/cluster.md). The position is the reader's own (the last sequence returned): the
// node's store records what it applied, and the reader starts after it.
//
// The consumer behind it is either ephemeral (one replica, created at each start) or durable
// (StreamReaderOptions::durable: named, with the stream's replicas). A node's applier uses a
// durable one: after a nats-server was killed, creating an ephemeral consumer was seen to time out
// again and again for over a minute here (NATS 2.9), leaving the node's store behind the stream,
// while a replicated consumer just elects a new leader and goes on.
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

struct StreamReaderOptions {
  // "" : an ephemeral consumer. Else the durable consumer of that name (letters, digits, - and _),
  // bound to if it exists and stands at or before the reader's position, else created (again) at
  // the position: a consumer past it (its reader's store was lost) is deleted first.
  std::string durable;
  int replicas = 1;  // of a durable consumer created here
  // A durable consumer nobody reads from for this long is removed by the server (its node gone).
  int64_t durable_inactive_seconds = 24 * 3600;
  // The subject covers the whole stream, whose sequences have no gaps (nothing is ever removed
  // from it): a message after a gap was delivered past messages lost in flight (handed to a
  // fetch that had given up), which the acknowledgement of a later one would acknowledge too
  // (AckAll). Then nothing is returned or acknowledged and the consumer is created again at the
  // position. A gap right after a consumer was created is the stream's own and accepted.
  bool contiguous = false;
};

class StreamReader {
 public:
  // Reads `subject` of `stream` from the message after `after_sequence` (0: from the start).
  static Result<std::unique_ptr<StreamReader>> Open(JetStream& js, std::string stream,
                                                    std::string subject, uint64_t after_sequence,
                                                    StreamReaderOptions options = {});
  ~StreamReader();
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  // Up to `max` messages after the last one returned, in stream order, waiting up to `wait_ms`
  // for the first; empty when none came. Unavailable when the server holding the reader's
  // consumer is gone or unreachable: the next call subscribes again at the same position, so
  // nothing is skipped or returned twice.
  Result<std::vector<StreamMessage>> Next(int max, int64_t wait_ms);

  // Deletes the durable consumer (best effort) and unsubscribes: the next call creates it again
  // at the reader's position. For a consumer that delivers nothing while the stream holds more
  // than was returned (seen here after the NATS servers had restarted: a bound durable consumer
  // kept its last message back for minutes). An ephemeral reader just unsubscribes.
  void DropConsumer();

  // The sequence of the last message returned (`after_sequence` before the first).
  uint64_t last_sequence() const { return last_sequence_; }

 private:
  StreamReader(JetStream& js, std::string stream, std::string subject, uint64_t after,
               StreamReaderOptions options)
      : js_(js),
        stream_(std::move(stream)),
        subject_(std::move(subject)),
        options_(std::move(options)),
        last_sequence_(after) {}
  Status Subscribe();
  // Makes sure the durable consumer exists at or before last_sequence_ + 1.
  Status EnsureDurable();
  void Unsubscribe();

  JetStream& js_;
  const std::string stream_;
  const std::string subject_;
  const StreamReaderOptions options_;
  uint64_t last_sequence_;
  natsSubscription* subscription_ = nullptr;
  bool created_ =
      false;  // the consumer was created by the last Subscribe and delivered nothing yet
};

}  // namespace trainwatch::cluster
