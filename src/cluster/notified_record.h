// NotifiedRecord: the cluster's record of the alert notifications receivers were sent
// (docs/cluster.md "Alerts across nodes"). A JetStream key-value bucket (`tw_notified`, three
// replicas, keys expiring after a TTL of days) holds one key per delivered notification: its
// idempotency key (notify::IdempotencyKey, the same on every node for the same incident and
// status), with the sending node's name as the value.
//
// The node that owns a run writes the key once a receiver accepted the notification (Mark, from
// the outbox's delivered listener); a node asks Contains before it notifies, and when it takes a
// partition over, so that an incident told by the old owner is not told again. A crash between the
// delivery and the write costs one duplicate delivery; a crash before the delivery costs nothing
// (the new owner finds no key and sends it).
//
// Thread-safety: every method may be called from any thread. Mark never waits for NATS: a
// background thread writes the keys, retrying while NATS is unreachable.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "cluster/jetstream.h"
#include "cluster/key_value.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "common/status.h"

namespace trainwatch::cluster {

struct NotifiedRecordOptions {
  std::string bucket = "tw_notified";
  int replicas = 3;
  double ttl_seconds = 3 * 24 * 3600;  // the first node to create the bucket sets it
  std::string node_name;               // written as each key's value
  size_t max_queued = 10000;           // more marks waiting than this: the oldest is dropped
  double retry_seconds = 1;            // after a failed write
};

class NotifiedRecord {
 public:
  // Creates or opens the bucket through `js`, which must outlive the record (as must `clock`,
  // `logger` and `metrics`), and starts the writer thread. Unavailable while NATS cannot be
  // reached.
  static Result<std::unique_ptr<NotifiedRecord>> Open(JetStream& js, NotifiedRecordOptions options,
                                                      Clock& clock, Logger& logger,
                                                      MetricsRegistry& metrics);
  ~NotifiedRecord();  // Stop()
  NotifiedRecord(const NotifiedRecord&) = delete;
  NotifiedRecord& operator=(const NotifiedRecord&) = delete;

  // Queues `key` to be written (an empty key is ignored). Returns at once.
  void Mark(std::string key) TW_EXCLUDES(mu_);
  // Whether `key` was written by any node (and has not expired). A key this node queued is
  // reported at once, before it is written. Unavailable (or another error) when NATS did not
  // answer. Reads may be served by a replica a moment behind a write made through another node.
  Result<bool> Contains(const std::string& key) TW_EXCLUDES(mu_);
  // Blocks until every key queued before the call was written or given up on (tests).
  void Flush() TW_EXCLUDES(mu_);
  // Tries each queued key once more, then stops the writer thread. Idempotent.
  void Stop() TW_EXCLUDES(mu_);

 private:
  NotifiedRecord(NotifiedRecordOptions options, std::unique_ptr<KeyValue> kv, Clock& clock,
                 Logger& logger, MetricsRegistry& metrics);
  void Loop() TW_EXCLUDES(mu_);

  const NotifiedRecordOptions options_;
  const std::unique_ptr<KeyValue> kv_;  // thread-safe (libnats)
  Clock& clock_;
  Logger& log_;
  Counter& marked_;
  Counter& mark_failures_;

  Mutex mu_;
  std::condition_variable cv_;       // queued keys, stop
  std::condition_variable done_cv_;  // a key written or given up on
  std::deque<std::string> queue_ TW_GUARDED_BY(mu_);
  std::string in_flight_ TW_GUARDED_BY(mu_);
  uint64_t queued_total_ TW_GUARDED_BY(mu_) = 0;
  uint64_t done_total_ TW_GUARDED_BY(mu_) = 0;
  bool stop_ TW_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace trainwatch::cluster
