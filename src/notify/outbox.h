// NotificationOutbox: a durable queue of deliveries (notification x receiver), sent by one
// delivery thread per receiver with retries, exponential backoff and jitter. The deliveries are
// kept in an OutboxLog (outbox_log.h, the segment files); this file is the routing and the
// delivery threads.
//
// Semantics:
//  - Enqueue applies the routes and appends one delivery per matching receiver to an on-disk log,
//    fdatasync'ed before it returns: an enqueued notification survives kill -9 and power loss,
//    and is sent after the next Open of the same directory.
//  - Each receiver sends its deliveries in enqueue order, one at a time. A retryable failure
//    (Notifier::Send returned Unavailable) is retried, after waits growing from
//    initial_backoff_seconds by backoff_multiplier up to max_backoff_seconds, each shortened by a
//    random fraction up to `jitter`; later deliveries to that receiver wait behind it. A permanent
//    failure, a delivery older than max_age_seconds, and the oldest waiting delivery of a
//    receiver holding more than max_queued_per_receiver are dropped with a log line.
//  - Receivers never wait for each other: a receiver that is down or slow delays only itself.
//  - At-least-once: a delivery is marked done (an ack record, not synced) after the receiver
//    accepted it, so a crash between the two, or a receiver that accepted but replied late,
//    sends it again. Receivers can deduplicate on (alert_id, status).
//  - Disk stays bounded: once the active segment outgrows segment_bytes (and twice the bytes of
//    the deliveries still waiting), the waiting deliveries are copied into a fresh segment and
//    older segments are deleted. Open always starts a fresh segment the same way. The file format
//    is docs/format/outbox.md; a torn tail is cut off with a warning.
//  - A full disk (ENOSPC) or an I/O error refuses the Enqueue with the file system's error
//    (ResourceExhausted or IoError, with the path); what was queued stays queued and intact, and
//    the next Enqueue once the disk takes writes again succeeds without a restart (OutboxLog).
//    Health() reports the refusal (for /healthz) until an Enqueue writes again.
//
// Thread-safe. Enqueue never waits for a receiver, only for the append and its fdatasync.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "common/status.h"
#include "notify/notification.h"
#include "notify/notifier.h"
#include "notify/notify_config.h"
#include "notify/outbox_format.h"
#include "notify/outbox_log.h"
#include "notify/route.h"

namespace trainwatch::notify {

struct OutboxOptions {
  double initial_backoff_seconds = 0.5;
  double max_backoff_seconds = 60;
  double backoff_multiplier = 2;
  double jitter = 0.2;                     // fraction, 0..1
  double max_age_seconds = 24 * 3600;      // older deliveries are dropped, not sent
  size_t max_queued_per_receiver = 10000;  // beyond it the oldest waiting delivery is dropped
  uint64_t segment_bytes = 4u << 20;       // compaction threshold of the active segment
  uint64_t jitter_seed = 0;                // 0: seeded from std::random_device
};

// Receivers and routes, ready to use: what Open and Reload take. Every route names a key of
// `receivers`.
struct RoutingTable {
  std::vector<Route> routes;
  std::map<std::string, std::unique_ptr<Notifier>> receivers;  // by receiver name
};

// The notifiers `config` describes (each built with `clock`, which must outlive them) and its
// routes.
RoutingTable BuildRoutingTable(const NotifyConfig& config, const Clock& clock);

class NotificationOutbox {
 public:
  // Opens (creating it if needed) the outbox in `dir` on `fs`, replays what an earlier run left
  // undelivered and starts delivering. Deliveries for receivers not in the config are dropped with
  // a log line. `clock` stamps deliveries (for max_age), times the backoff waits (the delivery
  // threads wait on it) and is handed to notifiers built from a NotifyConfig. `fs`, `clock`,
  // `logger` and `metrics` must outlive the outbox. Registers the counters
  // trainwatch_notifications_{sent,failed,dropped}_total (failed: every failed attempt, retried
  // or not) and the gauge trainwatch_notifications_queued. Returns IoError/NotFound from the file
  // system with the path, InvalidArgument for a route naming a receiver the table lacks.
  static Result<std::unique_ptr<NotificationOutbox>> Open(std::string dir, NotifyConfig config,
                                                          FileSystem& fs, const Clock& clock,
                                                          OutboxOptions options, Logger& logger,
                                                          MetricsRegistry& metrics);
  // The same with notifiers built by the caller (tests, custom receivers).
  static Result<std::unique_ptr<NotificationOutbox>> Open(std::string dir, RoutingTable table,
                                                          FileSystem& fs, const Clock& clock,
                                                          OutboxOptions options, Logger& logger,
                                                          MetricsRegistry& metrics);

  // Stop().
  ~NotificationOutbox();
  NotificationOutbox(const NotificationOutbox&) = delete;
  NotificationOutbox& operator=(const NotificationOutbox&) = delete;

  // Routes `n` and durably queues one delivery per matching receiver (none: OK, nothing written).
  // Returns once the deliveries are on disk; the file system's error (with the path:
  // ResourceExhausted for a full disk, IoError otherwise) when the append or its sync failed, in
  // which case nothing is queued in memory (the bytes may still be sent after a restart);
  // Unavailable after Stop().
  Status Enqueue(const Notification& n);

  // Told, on the receiver's delivery thread, after a receiver accepted a delivery (not for
  // reminders: Notification::repeat); must not block for long, the receiver's next delivery waits
  // for it. Cluster mode records the notification's idempotency key with it. Set before the first
  // Enqueue; deliveries replayed by Open may be sent before it is set.
  using DeliveredFn = std::function<void(const Notification&, const std::string& receiver)>;
  void SetDeliveredListener(DeliveredFn on_delivered) TW_EXCLUDES(mu_);

  // Swaps receivers and routes. A receiver kept by name gets the new notifier and keeps its queue;
  // the queued deliveries of a removed receiver are dropped with a log line; a new receiver starts.
  // InvalidArgument (nothing changed) for a route naming a receiver the table lacks; Unavailable
  // after Stop().
  Status Reload(NotifyConfig config);
  Status Reload(RoutingTable table);

  // Stops the delivery threads (waiting for sends in progress, at most one timeout each) and
  // syncs the log. Undelivered entries stay on disk for the next Open. Idempotent.
  void Stop();

  // OK, or the disk's error (ResourceExhausted, IoError, with the path) that refused the last
  // Enqueue that wrote anything: degraded from a refused Enqueue until one writes again (an
  // Enqueue no route matches writes nothing and changes nothing). For /healthz.
  Status Health() const;

  // Deliveries queued and not yet sent or dropped.
  uint64_t Queued() const;
  // Waits until nothing is queued: every delivery sent or dropped. Waits for as long as that
  // takes (a receiver being retried keeps it waiting); for tests.
  void WaitIdle();

 private:
  struct Delivery;
  struct Worker;

  NotificationOutbox(std::string dir, const Clock& clock, OutboxOptions options, Logger& logger,
                     MetricsRegistry& metrics);

  void StartWorker(Worker& w) TW_REQUIRES(mu_);
  void RunWorker(Worker* w);  // the worker's thread
  std::unique_ptr<Worker> NewWorker(const std::string& name, std::unique_ptr<Notifier> notifier);
  static Status CheckTable(const RoutingTable& table);

  // Marks delivery `id` of `w` done: pops it from w's queue if at the head, acks it in the log.
  void FinishLocked(Worker& w, uint64_t id, AckOutcome outcome) TW_REQUIRES(mu_);
  void DropQueuedLocked(Worker& w, const std::string& reason) TW_REQUIRES(mu_);
  void UpdateQueuedLocked() TW_REQUIRES(mu_);

  const std::string dir_;
  const OutboxOptions options_;
  const Clock& clock_;
  Logger& logger_;
  Counter& sent_;
  Counter& failed_;
  Counter& dropped_;
  // Read by the queued gauge, which the registry may call after the outbox is gone.
  const std::shared_ptr<std::atomic<uint64_t>> queued_;

  mutable Mutex mu_;
  std::condition_variable idle_cv_;  // notified whenever a delivery is done
  std::unique_ptr<OutboxLog> log_ TW_GUARDED_BY(mu_);
  std::vector<Route> routes_ TW_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Worker>> workers_ TW_GUARDED_BY(mu_);
  bool stopped_ TW_GUARDED_BY(mu_) = false;
  Status enqueue_error_ TW_GUARDED_BY(mu_);  // Health()
  DeliveredFn on_delivered_ TW_GUARDED_BY(mu_);
};

}  // namespace trainwatch::notify
