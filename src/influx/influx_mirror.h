// InfluxMirror: forwards every accepted point to an InfluxDB 1.x (--mirror-influx URL,
// docs/influx.md "Mirroring to InfluxDB"), as line protocol:
//
//   training_metrics,metric_name=<metric>,project=<project>,run=<run>[,<tag>=<v>...]
//   step=<step>i,value=<v> <time µs>
//
// (the layout of /query's training_metrics and of deploy/grafana, so the same dashboards read
// either; a metric "name{k=v}" from the line protocol gives its tags back).
//
// Ingest never waits for it: Offer (the engine's commit listener) copies the scalar rows into a
// bounded queue and returns. The mirror's intake thread writes them as lines to a LineOutbox
// (DATA_DIR/mirror/influx, synced) and its sender thread POSTs batches of them to /write,
// advancing the outbox's cursor on 204 and retrying everything else with backoff (0.5 s doubling
// to 30 s), so the backlog survives restarts of either side. InfluxDB keeps one point per
// (measurement, tags, timestamp), so a batch sent twice (a crash between the 204 and the cursor)
// is stored once. What is lost: points still in the memory queue at a crash (not yet in the
// outbox: milliseconds' worth), and points dropped when the queue or outbox is full (counted in
// trainwatch_mirror_influx_dropped_points_total and logged). A point InfluxDB refuses (400, e.g.
// a field type conflict) is logged and skipped, not retried.
//
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "influx/line_outbox.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::influx {

struct InfluxMirrorOptions {
  std::string url;  // "http://influx:8086"
  std::string database = "trainwatch";
  std::string username;  // "" = no authentication
  std::string password;  // never logged
  std::string dir;       // the outbox directory
  uint64_t max_backlog_bytes = 256ull << 20;
  size_t max_queued_points = 1'000'000;  // in memory, before the outbox
  size_t batch_bytes = 1 << 20;          // per POST
  double timeout_seconds = 30;
  double min_backoff_seconds = 0.5;
  double max_backoff_seconds = 30;
};

// The line protocol of a request's scalar rows (the format above). NaN and infinite values have
// no line protocol and are skipped. Appends to `out`; returns the number of lines.
size_t FormatLines(const v1::WriteRequest& request, std::string* out);

class InfluxMirror {
 public:
  // Opens the outbox and starts the threads. `fs`, `clock`, `log` and `metrics` must outlive it.
  static Result<std::unique_ptr<InfluxMirror>> Start(InfluxMirrorOptions options, FileSystem& fs,
                                                     const Clock& clock, Logger& log,
                                                     MetricsRegistry& metrics);
  ~InfluxMirror();
  InfluxMirror(const InfluxMirror&) = delete;
  InfluxMirror& operator=(const InfluxMirror&) = delete;

  // Queues the request's scalar rows; never blocks on the mirror's I/O. Drops (and counts) them
  // when the queue is full.
  void Offer(const v1::WriteRequest& request);
  // Writes what is queued to the outbox and stops both threads (a POST in flight finishes).
  void Stop();

 private:
  InfluxMirror(InfluxMirrorOptions options, std::shared_ptr<LineOutbox> outbox, const Clock& clock,
               Logger& log, MetricsRegistry& metrics);
  void IntakeLoop();
  void SendLoop();
  // One POST of `lines`: Ok on 204; InvalidArgument for a refusal not worth retrying (400);
  // Unavailable (or another error) to retry.
  Status Post(const std::string& lines, bool* created_database);
  Status CreateDatabase();

  const InfluxMirrorOptions options_;
  std::shared_ptr<LineOutbox> outbox_;  // shared with the backlog gauge
  std::shared_ptr<std::atomic<uint64_t>> queued_gauge_;
  const Clock& clock_;
  Logger& log_;
  Counter& sent_;
  Counter& dropped_;
  Counter& refused_;
  Counter& errors_;
  Counter& posts_;

  Mutex mu_;
  std::condition_variable intake_cv_;
  std::condition_variable send_cv_;
  std::deque<v1::WriteRequest> queue_ TW_GUARDED_BY(mu_);
  size_t queued_points_ TW_GUARDED_BY(mu_) = 0;
  bool stop_ TW_GUARDED_BY(mu_) = false;
  bool intake_done_ TW_GUARDED_BY(mu_) = false;
  bool appended_ TW_GUARDED_BY(mu_) = false;  // lines were appended since the sender looked
  bool dropping_ TW_GUARDED_BY(mu_) = false;  // logged once per episode
  std::atomic<bool> stopping_{false};
  std::thread intake_;
  std::thread sender_;
};

}  // namespace trainwatch::influx
