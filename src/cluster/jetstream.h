// A connection to a NATS JetStream cluster (libnats): streams, acknowledged publishing with
// de-duplication ids, and key-value buckets. The one place cluster mode talks to NATS
// (docs/cluster.md); callers see trainwatch Status, never natsStatus.
#pragma once

#include <nats/nats.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/key_value.h"
#include "common/status.h"

namespace trainwatch::cluster {

struct JetStreamOptions {
  // nats:// URLs of the cluster's servers; the connection fails over between them and adds the
  // servers the cluster announces.
  std::vector<std::string> servers;
  std::string connection_name = "trainwatch";
  // Connecting, and each JetStream request (publish acknowledgement, stream and KV calls).
  int64_t connect_timeout_ms = 2000;
  int64_t request_timeout_ms = 5000;
};

struct StreamSpec {
  std::string name;
  std::vector<std::string> subjects;
  int replicas = 3;
  // A message id seen again within this window is acknowledged as a duplicate and not stored.
  int64_t duplicate_window_ms = 2 * 60 * 1000;
  int64_t max_age_ms = 0;  // 0: kept until deleted
};

struct PublishAck {
  uint64_t sequence =
      0;  // the message's sequence in the stream (the first copy's, for a duplicate)
  bool duplicate = false;  // the stream already held a message with this id
};

struct StreamState {
  uint64_t messages = 0;
  uint64_t first_sequence = 0;
  uint64_t last_sequence = 0;
  std::string leader;  // the server name of the stream's raft leader ("" when there is none)
};

class JetStream {
 public:
  // Connects; Unavailable when no server answers within the connect timeout. Reconnection after
  // a later loss is automatic and unbounded (requests in between fail with Unavailable).
  static Result<std::unique_ptr<JetStream>> Connect(const JetStreamOptions& options);
  ~JetStream();
  JetStream(const JetStream&) = delete;
  JetStream& operator=(const JetStream&) = delete;

  // Creates the stream, or checks that the existing one has the same subjects and replicas
  // (InvalidArgument naming the difference). Never deletes or re-creates a stream: on NATS 2.9
  // re-creating a stream by name can leave a replica missing messages (nats-server #4174). An
  // existing stream whose max_age differs from spec.max_age_ms is updated in place (a stream
  // update, which keeps its messages); *max_age_changed (if given) says whether that happened.
  // The duplicate window is capped at max_age (NATS refuses a longer one).
  Status EnsureStream(const StreamSpec& spec, bool* max_age_changed = nullptr);
  // Removes the stream's messages on `subject` (a filter; may hold wildcards).
  Status PurgeSubject(std::string_view stream, std::string_view subject);
  // Removes the stream's messages with a sequence below `sequence` (tests; what max_age does).
  Status PurgeBefore(std::string_view stream, uint64_t sequence);
  Result<StreamState> GetStreamState(std::string_view stream);

  // Publishes and waits for the stream's acknowledgement (stored on a quorum of replicas).
  // `msg_id` de-duplicates within the stream's window: publishing the same id again (a retry
  // after a timeout, through another server, after a leader change) stores nothing new.
  // Unavailable when no acknowledgement came (the message may or may not be stored: retry
  // with the same id).
  Result<PublishAck> Publish(std::string_view subject, std::string_view data,
                             std::string_view msg_id);

  // Creates the bucket if it does not exist (`ttl_ms`: a key not written for that long expires;
  // 0 for never), else opens it.
  Result<std::unique_ptr<KeyValue>> OpenKeyValue(const KeyValueSpec& spec);

  // The URL of the server this connection uses now ("" while disconnected).
  std::string ConnectedUrl() const;
  // The largest message the server this connection uses takes (its max_payload); 1 MiB, NATS's
  // default, while disconnected.
  size_t MaxPayload() const;

 private:
  friend class StreamReader;  // subscribes through js_
  JetStream(natsConnection* connection, jsCtx* js) : connection_(connection), js_(js) {}

  natsConnection* connection_;
  jsCtx* js_;
};

}  // namespace trainwatch::cluster
