// SharedRecords: the few records every node of a cluster must hold alike, made through any node —
// today the alert operations of the API (silences and acknowledgements, docs/cluster.md "Alerts
// across nodes"). A JetStream key-value bucket (`tw_alert_ops`, three replicas, keys expiring
// after a TTL of days) holds one key per record with its latest version as the value.
//
// Put queues a record; a background thread writes it to the bucket, retrying while NATS is
// unreachable. The same thread reads the bucket every `sync_seconds` — one stream-state request,
// and a listing only when the bucket's stream moved — and hands each key whose revision it has not
// applied yet to `apply`, the node's own writes included (applying must be idempotent). A key
// whose apply fails is offered again at later reads (an acknowledgement can arrive before the
// alert it names is detected on this node), `give_up_after` times at most.
//
// Thread-safety: Put, Flush and Stop may be called from any thread; `apply` runs on the
// background thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "cluster/jetstream.h"
#include "cluster/key_value.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "common/status.h"

namespace trainwatch::cluster {

struct SharedRecordsOptions {
  std::string bucket = "tw_alert_ops";
  int replicas = 3;
  double ttl_seconds = 90 * 24 * 3600;  // the first node to create the bucket sets it
  double sync_seconds = 1;              // between reads of the bucket
  double retry_seconds = 1;             // after a failed write
  size_t max_queued = 10000;            // more records waiting than this: the oldest is dropped
  int give_up_after = 120;              // failed applies of one revision before it is skipped
};

class SharedRecords {
 public:
  // Applies one record (key, value) to this node. An InvalidArgument error (a value this node
  // cannot read) is not retried.
  using ApplyFn = std::function<Status(const std::string& key, const std::string& value)>;

  // Creates or opens the bucket through `js`, which must outlive the records (as must `clock`,
  // `logger` and `metrics`), and starts the background thread. Unavailable while NATS cannot be
  // reached.
  static Result<std::unique_ptr<SharedRecords>> Open(JetStream& js, SharedRecordsOptions options,
                                                     Clock& clock, Logger& logger,
                                                     MetricsRegistry& metrics, ApplyFn apply);
  ~SharedRecords();  // Stop()
  SharedRecords(const SharedRecords&) = delete;
  SharedRecords& operator=(const SharedRecords&) = delete;

  // Queues `value` as the record `key`. Returns at once.
  void Put(std::string key, std::string value) TW_EXCLUDES(mu_);
  // Blocks until every record queued before the call was written (or given up on) and the bucket
  // was read once after that (tests).
  void Flush() TW_EXCLUDES(mu_);
  // Tries each queued record once more, then stops the background thread. Idempotent.
  void Stop() TW_EXCLUDES(mu_);

 private:
  SharedRecords(SharedRecordsOptions options, std::unique_ptr<KeyValue> kv, Clock& clock,
                Logger& logger, MetricsRegistry& metrics, ApplyFn apply);
  void Loop() TW_EXCLUDES(mu_);
  // One read of the bucket: applies what changed. On the background thread only.
  void Read();

  const SharedRecordsOptions options_;
  const std::unique_ptr<KeyValue> kv_;  // thread-safe (libnats)
  Clock& clock_;
  Logger& log_;
  const ApplyFn apply_;
  Counter& written_;
  Counter& write_failures_;
  Counter& applied_;

  // The background thread's own: the bucket stream's sequence at the last complete read, and
  // per key the revision applied (or skipped) and the failed applies of a newer one.
  uint64_t read_sequence_ = 0;
  std::map<std::string, uint64_t> applied_revision_;
  std::map<std::string, int> failures_;

  Mutex mu_;
  std::condition_variable cv_;       // queued records, stop
  std::condition_variable done_cv_;  // a record written, a read done
  std::deque<std::pair<std::string, std::string>> queue_ TW_GUARDED_BY(mu_);
  uint64_t queued_total_ TW_GUARDED_BY(mu_) = 0;
  uint64_t written_total_ TW_GUARDED_BY(mu_) = 0;  // written or given up on
  uint64_t reads_ TW_GUARDED_BY(mu_) = 0;
  bool read_requested_ TW_GUARDED_BY(mu_) = false;
  bool stop_ TW_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace trainwatch::cluster
