// AlertManager: turns the detectors' and rules' events into alerts with a lifecycle — pending,
// firing, resolved — deduplicated per incident, persisted, silenced, acknowledged, pushed to live
// subscribers and handed to the notifiers.
//
// Records reach it through OnCommit (the engine's commit listener), which copies the training
// rows of each committed write into a bounded queue. The detection thread runs every record through
// its run's RunMonitor (O(1) amortised per point, no I/O) — beside the applier, not on it, so that
// ingest and detection use two cores; when detection falls behind by more than the queue's bound,
// OnCommit waits: no point is ever skipped. The events go to the alert thread, which persists them
// and notifies; that thread also checks every running run for `stalled`, and the ranks of every
// distributed run for `rank_dead` and `collective_hang`, once a second against the server's
// clock. Thread-safe.
//
// Cluster mode (SetClusterGate; docs/cluster.md "Alerts across nodes"): every node detects every
// run, so every node holds the same alerts, but only the node that owns a run's partition notifies
// for it, and only what the cluster's notified record does not hold yet. When a node gains
// partitions (RequestTakeOver) it tells receivers what they were not told about its new runs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "alerting/alert_record.h"
#include "alerting/alert_store.h"
#include "alerting/run_monitor.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "notify/notification.h"
#include "rules/rule_set.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::alerting {

struct AlertManagerOptions {
  // A resolved incident that comes back within this many seconds reopens the same alert without
  // notifying again (flapping).
  double cooldown_seconds = 600;
  double stall_check_interval_seconds = 1;
  // Firing alerts are re-sent this often to receivers that want reminders (Alertmanager, which
  // otherwise resolves them after its resolve_timeout).
  double resend_interval_seconds = 60;
  // Bytes of committed writes waiting for detection before OnCommit waits for the detector.
  size_t max_queued_bytes = 64 << 20;
  // Base of the chart links in notifications:
  // <external_url>/#/runs/<project>/<run>?metric=..&step=..
  std::string external_url = "http://127.0.0.1:8080";
  // Cluster mode: a take-over looks back this far for resolved alerts whose resolution may not
  // have been sent (the notified record keeps its keys as long).
  double takeover_lookback_seconds = 3 * 24 * 3600;
};

// What a node of a cluster decides notifications by (AlertManager::SetClusterGate).
struct ClusterGate {
  // Whether this node notifies for the run now: it owns the run's partition.
  std::function<bool(const std::string& project, const std::string& run)> owns;
  // Whether a notification with this idempotency key was delivered already, by any node (the
  // cluster's notified record). An error counts as not delivered: a duplicate rather than a loss.
  std::function<Result<bool>(const std::string& idempotency_key)> delivered;
};

// An operation on alerts made through one node's API, which a cluster applies on every node
// (cluster mode: SetSharedOpsListener, ApplyShared; docs/cluster.md "Alerts across nodes").
struct SharedAlertOp {
  enum class Kind { kSilence, kAck };
  Kind kind = Kind::kSilence;
  Silence silence;          // kSilence: the silence as it is now (added or expired), uid set
  std::string incident_id;  // kAck: the incident (AlertRecord::IncidentId), the same on every node
  bool acknowledged = false;
  std::string by;
  double at = 0;  // unix seconds

  // The record's key, one per silence and per incident: "silence.<uid>", "ack.<incident id>".
  std::string Key() const;
  std::string ToJson() const;
  static Result<SharedAlertOp> FromJson(std::string_view json);
};

// Which alerts List returns; empty fields match everything.
struct AlertQuery {
  std::string project, run, kind, metric;
  std::optional<AlertStatus> status;
  bool active_only = false;  // pending or firing
  uint64_t after_id = 0;     // only ids greater than this
  size_t limit = 1000;       // newest first
};

class AlertManager {
 public:
  // Persists a notification (the notifiers' outbox); an error is logged and counted, not retried
  // here.
  using NotifyFn = std::function<Status(const notify::Notification&)>;
  // Told about every created or changed alert (live push); called on the manager's thread.
  using ChangeFn = std::function<void(const AlertRecord&)>;

  // Opens the alert store in `dir`. `fs`, `clock`, `logger` and `metrics` must outlive the manager.
  static Result<std::unique_ptr<AlertManager>> Open(AlertManagerOptions options, FileSystem& fs,
                                                    const std::string& dir, Clock& clock,
                                                    Logger& logger, MetricsRegistry& metrics,
                                                    std::shared_ptr<const rules::RuleSet> rules);
  ~AlertManager();
  AlertManager(const AlertManager&) = delete;
  AlertManager& operator=(const AlertManager&) = delete;

  // Set both before Start().
  void SetNotify(NotifyFn notify) { notify_ = std::move(notify); }
  void SetChangeListener(ChangeFn on_change) { on_change_ = std::move(on_change); }
  // Cluster mode, before Start(): notify only for owned runs, and not what was delivered already.
  void SetClusterGate(ClusterGate gate) { gate_ = std::move(gate); }
  // Cluster mode, before Start(): told of every silence added or expired and every alert
  // acknowledged through this node's API (not of what ApplyShared applies), after it is stored.
  void SetSharedOpsListener(std::function<void(const SharedAlertOp&)> fn) {
    on_shared_op_ = std::move(fn);
  }
  // Applies an operation made through any node: a silence is added (with a local id) or updated by
  // its uid; an acknowledgement is set on the incident's alert. Idempotent. NotFound for an
  // incident this node has not detected (yet).
  Status ApplyShared(const SharedAlertOp& op) TW_EXCLUDES(state_mu_);
  void Start();
  // Processes what is queued, then joins the thread.
  void Stop();

  // The engine's commit listener: queues the write's training rows for detection. Never does I/O;
  // waits only while the detection queue is full.
  void OnCommit(const v1::WriteRequest& request);
  // Swaps the rules; every run keeps its detector state and the state of unchanged rules.
  void Reload(std::shared_ptr<const rules::RuleSet> rules);
  std::shared_ptr<const rules::RuleSet> rules() const;
  // After Start(): blocks until every write committed before the call went through detection and
  // its events are persisted and notified.
  void Flush();
  // Cluster mode: this node gained partitions. Asks the alert thread to check every alert of the
  // runs it owns now and to notify the receivers of what they were not told (firing alerts, and
  // resolutions of alerts they were told fired); returns at once. The outcomes are counted in
  // trainwatch_alerts_takeover_{notified,known}_total.
  void RequestTakeOver() TW_EXCLUDES(queue_mu_);

  std::vector<AlertRecord> List(const AlertQuery& query) const;
  std::optional<AlertRecord> Get(uint64_t id) const;
  // Sets or clears the acknowledgement. NotFound for an unknown id.
  Result<AlertRecord> Acknowledge(uint64_t id, bool acknowledged, const std::string& by);
  // Adds a silence (id assigned; starts_at defaults to now). InvalidArgument when it has ended.
  Result<Silence> AddSilence(Silence silence);
  // Ends a silence now. NotFound for an unknown id.
  Result<Silence> ExpireSilence(uint64_t id);
  std::vector<Silence> Silences(bool include_expired) const;

 private:
  struct QueuedEvent {
    std::string project, run;
    AlertEvent event;
  };
  struct Monitored {
    std::unique_ptr<RunMonitor> monitor;
    double clock_offset = 0;  // server time minus record time at the last record's arrival
  };

  AlertManager(AlertManagerOptions options, Clock& clock, Logger& logger, MetricsRegistry& metrics,
               std::unique_ptr<AlertStore> store, std::shared_ptr<const rules::RuleSet> rules);
  struct QueuedWrite {
    v1::WriteRequest request;  // only what detection reads: rows, metric columns, status changes
    double arrival = 0;        // server clock when it was committed
    size_t bytes = 0;
  };
  void Loop() TW_EXCLUDES(queue_mu_, state_mu_);
  void DetectLoop() TW_EXCLUDES(detect_mu_);
  void Detect(const QueuedWrite& write) TW_EXCLUDES(monitors_mu_);
  void CheckStalled() TW_EXCLUDES(monitors_mu_);
  void ResendFiring() TW_EXCLUDES(state_mu_);
  void FeedBatch(const v1::RunBatch& batch, double arrival, RunMonitor& monitor,
                 std::vector<AlertEvent>* out) TW_REQUIRES(monitors_mu_);
  void Enqueue(std::vector<QueuedEvent> events) TW_EXCLUDES(queue_mu_);
  void Process(const QueuedEvent& queued) TW_REQUIRES(state_mu_);
  void Fire(const QueuedEvent& queued, bool pending) TW_REQUIRES(state_mu_);
  void Resolve(const std::string& fingerprint, int64_t step, const std::string& message)
      TW_REQUIRES(state_mu_);
  void Save(AlertRecord& alert) TW_REQUIRES(state_mu_);
  // What Notify did: kNotOwner (another node's run), kKnown (delivered already by some node;
  // recorded as notified), kQueued, kFailed (the outbox refused it).
  enum class NotifyOutcome { kNone, kNotOwner, kKnown, kQueued, kFailed };
  NotifyOutcome Notify(AlertRecord& alert, bool repeat = false) TW_REQUIRES(state_mu_);
  // RequestTakeOver's work, on the alert thread.
  void TakeOver() TW_REQUIRES(state_mu_);
  // Sends again, in id order, the notifications the outbox refused (a full or failing disk), at
  // each stall check until it takes them: stops at the first refusal.
  void RetryRefused() TW_REQUIRES(state_mu_);
  // The gate's answer for `key`; false when unknown (an error is logged).
  bool Delivered(const std::string& key) const;
  uint64_t SilenceFor(const AlertRecord& alert) const TW_REQUIRES(state_mu_);
  // Stores the acknowledgement (or its removal) of `alert`, made at `at`, and tells the change
  // listener.
  Status SetAcknowledged(AlertRecord& alert, bool acknowledged, const std::string& by, double at)
      TW_REQUIRES(state_mu_);
  // Tells the shared-ops listener of a silence added or expired here.
  void ShareSilence(const Silence& silence) TW_EXCLUDES(state_mu_);
  notify::Notification ToNotification(const AlertRecord& alert) const;

  const AlertManagerOptions options_;
  Clock& clock_;
  Logger& logger_;
  NotifyFn notify_;
  ChangeFn on_change_;
  std::function<void(const SharedAlertOp&)> on_shared_op_;
  ClusterGate gate_;  // set before Start; empty in single-node mode
  Counter& records_seen_;
  Counter& alerts_fired_;
  Counter& notify_errors_;
  Counter& takeover_notified_;
  Counter& takeover_known_;

  // Detection state: one monitor per running run, touched by the applier thread and the stall
  // check.
  mutable Mutex monitors_mu_;
  std::shared_ptr<const rules::RuleSet> rules_ TW_GUARDED_BY(monitors_mu_);
  std::unordered_map<std::string, Monitored> monitors_
      TW_GUARDED_BY(monitors_mu_);  // key project\x1frun

  // Committed writes from OnCommit to the detection thread.
  Mutex detect_mu_;
  std::condition_variable detect_cv_;     // work arrived, or stop
  std::condition_variable detect_space_;  // room in the queue, or a batch detected
  std::deque<QueuedWrite> detect_queue_ TW_GUARDED_BY(detect_mu_);
  size_t detect_bytes_ TW_GUARDED_BY(detect_mu_) = 0;
  uint64_t writes_queued_ TW_GUARDED_BY(detect_mu_) = 0;
  uint64_t writes_detected_ TW_GUARDED_BY(detect_mu_) = 0;
  bool detect_stop_ TW_GUARDED_BY(detect_mu_) = false;
  std::thread detect_thread_;

  // Events from detection to the alert thread.
  Mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::condition_variable drained_cv_;
  std::vector<QueuedEvent> queue_ TW_GUARDED_BY(queue_mu_);
  uint64_t queued_batches_ TW_GUARDED_BY(queue_mu_) = 0;
  uint64_t done_batches_ TW_GUARDED_BY(queue_mu_) = 0;
  bool stop_ TW_GUARDED_BY(queue_mu_) = false;
  bool takeover_requested_ TW_GUARDED_BY(queue_mu_) = false;
  std::thread thread_;

  // Alert state: the store and the index of open alerts.
  mutable Mutex state_mu_;
  std::unique_ptr<AlertStore> store_ TW_GUARDED_BY(state_mu_);
  // The latest alert of each incident.
  std::unordered_map<std::string, uint64_t> by_fingerprint_ TW_GUARDED_BY(state_mu_);
  // Alerts whose last notification the outbox refused (RetryRefused). Filled again on start from
  // the firing alerts no receiver was told of.
  std::set<uint64_t> refused_ TW_GUARDED_BY(state_mu_);
};

}  // namespace trainwatch::alerting
