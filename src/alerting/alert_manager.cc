// AlertManager, alert side: the lifecycle thread, the store, notifications, and the operator API
// (alert_manager.h); the detection side is alert_manager_detect.cc.
#include "alerting/alert_manager.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/json.h"
#include "common/strings.h"

namespace trainwatch::alerting {

Result<std::unique_ptr<AlertManager>> AlertManager::Open(
    AlertManagerOptions options, FileSystem& fs, const std::string& dir, Clock& clock,
    Logger& logger, MetricsRegistry& metrics, std::shared_ptr<const rules::RuleSet> rules) {
  TW_ASSIGN_OR_RETURN(auto store, AlertStore::Open(fs, dir));
  if (store->dropped_tail_bytes() > 0) {
    logger.Warn("alert store: dropped a torn tail",
                {{"bytes", std::to_string(store->dropped_tail_bytes())}});
  }
  return std::unique_ptr<AlertManager>(new AlertManager(std::move(options), clock, logger, metrics,
                                                        std::move(store), std::move(rules)));
}

AlertManager::AlertManager(AlertManagerOptions options, Clock& clock, Logger& logger,
                           MetricsRegistry& metrics, std::unique_ptr<AlertStore> store,
                           std::shared_ptr<const rules::RuleSet> rules)
    : options_(std::move(options)),
      clock_(clock),
      logger_(logger),
      records_seen_(metrics.AddCounter("trainwatch_detector_records_total",
                                       "Training records evaluated by the detectors and rules.")),
      alerts_fired_(
          metrics.AddCounter("trainwatch_alerts_fired_total", "Alerts that started firing.")),
      notify_errors_(
          metrics.AddCounter("trainwatch_alert_notify_errors_total",
                             "Alert notifications that could not be queued for the notifiers.")),
      takeover_notified_(metrics.AddCounter(
          "trainwatch_alerts_takeover_notified_total",
          "Cluster mode: notifications sent on taking runs over, their receivers not told yet.")),
      takeover_known_(metrics.AddCounter(
          "trainwatch_alerts_takeover_known_total",
          "Cluster mode: alerts of runs taken over whose receivers another node had told.")),
      rules_(std::move(rules)),
      store_(std::move(store)) {
  for (const auto& [id, alert] : store_->alerts()) {
    by_fingerprint_[alert.Fingerprint()] = id;
    // Firing, not silenced, and never told (a reopened flapping alert was told "resolved"): its
    // notification was refused before a restart.
    if (alert.status == AlertStatus::kFiring && alert.silenced_by == 0 && alert.notified.empty()) {
      refused_.insert(id);
    }
  }
  metrics.AddGauge("trainwatch_alerts_active", "Alerts pending or firing.", [this] {
    MutexLock lock(state_mu_);
    double n = 0;
    for (const auto& [id, a] : store_->alerts()) n += a.status != AlertStatus::kResolved;
    return n;
  });
}

AlertManager::~AlertManager() { Stop(); }

void AlertManager::Start() {
  thread_ = std::thread([this] { Loop(); });
  detect_thread_ = std::thread([this] { DetectLoop(); });
}

void AlertManager::Stop() {
  {
    MutexLock lock(detect_mu_);
    detect_stop_ = true;
  }
  detect_cv_.notify_all();
  detect_space_.notify_all();
  if (detect_thread_.joinable()) detect_thread_.join();
  {
    MutexLock lock(queue_mu_);
    stop_ = true;
  }
  queue_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// ---------------------------------------------------------------------------------------------
// Lifecycle, on the manager's thread.

void AlertManager::Enqueue(std::vector<QueuedEvent> events) {
  {
    MutexLock lock(queue_mu_);
    for (QueuedEvent& e : events) queue_.push_back(std::move(e));
    ++queued_batches_;
  }
  queue_cv_.notify_one();
}

void AlertManager::Flush() {
  {
    MutexLock lock(detect_mu_);
    const uint64_t target = writes_queued_;
    detect_space_.wait(lock.native(),
                       [&]() TW_REQUIRES(detect_mu_) { return writes_detected_ >= target; });
  }
  MutexLock lock(queue_mu_);
  const uint64_t target = queued_batches_;
  queue_cv_.notify_one();
  drained_cv_.wait(lock.native(), [&]() TW_REQUIRES(queue_mu_) { return done_batches_ >= target; });
}

void AlertManager::RequestTakeOver() {
  {
    MutexLock lock(queue_mu_);
    takeover_requested_ = true;
    ++queued_batches_;  // Flush waits for it
  }
  queue_cv_.notify_one();
}

void AlertManager::Loop() {
  int64_t next_check = clock_.DeadlineIn(options_.stall_check_interval_seconds);
  double next_resend = clock_.NowUnixSeconds() + options_.resend_interval_seconds;
  {
    MutexLock state(state_mu_);
    RetryRefused();  // what was refused before a restart
  }
  MutexLock lock(queue_mu_);
  for (;;) {
    clock_.WaitUntil(lock.native(), queue_cv_, next_check, [&]() TW_REQUIRES(queue_mu_) {
      return stop_ || !queue_.empty() || takeover_requested_;
    });
    std::vector<QueuedEvent> batch;
    batch.swap(queue_);
    const uint64_t batches = queued_batches_;
    const bool stopping = stop_;
    const bool takeover = std::exchange(takeover_requested_, false);
    lock.Unlock();
    {
      MutexLock state(state_mu_);
      for (const QueuedEvent& e : batch) Process(e);
      if (takeover && !stopping) TakeOver();
    }
    if (clock_.MonotonicNanos() >= next_check && !stopping) {
      CheckStalled();
      {
        MutexLock state(state_mu_);
        RetryRefused();
      }
      if (clock_.NowUnixSeconds() >= next_resend) {
        ResendFiring();
        next_resend = clock_.NowUnixSeconds() + options_.resend_interval_seconds;
      }
      next_check = clock_.DeadlineIn(options_.stall_check_interval_seconds);
    }
    lock.Lock();
    done_batches_ = std::max(done_batches_, batches);
    drained_cv_.notify_all();
    if (stopping && queue_.empty()) return;
  }
}

void AlertManager::Process(const QueuedEvent& queued) {
  const AlertEvent& e = queued.event;
  switch (e.type) {
    case AlertEvent::Type::kPending:
      Fire(queued, /*pending=*/true);
      break;
    case AlertEvent::Type::kFiring:
      Fire(queued, /*pending=*/false);
      break;
    case AlertEvent::Type::kResolved:
      if (e.kind.empty()) {
        // The run ended: resolve each of its open alerts.
        std::vector<std::string> open;
        for (const auto& [id, a] : store_->alerts()) {
          if (a.project == queued.project && a.run == queued.run &&
              a.status != AlertStatus::kResolved) {
            open.push_back(a.Fingerprint());
          }
        }
        for (const std::string& f : open) Resolve(f, -1, e.message);
      } else {
        AlertRecord probe;
        probe.project = queued.project;
        probe.run = queued.run;
        probe.kind = e.kind;
        probe.name = e.name;
        probe.rank = e.rank;
        Resolve(probe.Fingerprint(), e.step, e.message);
      }
      break;
  }
}

void AlertManager::Fire(const QueuedEvent& queued, bool pending) {
  const AlertEvent& e = queued.event;
  const double now = clock_.NowUnixSeconds();
  AlertRecord fresh;
  fresh.project = queued.project;
  fresh.run = queued.run;
  fresh.kind = e.kind;
  fresh.name = e.name;
  fresh.rank = e.rank;
  fresh.host = e.host;
  const std::string fingerprint = fresh.Fingerprint();
  auto known = by_fingerprint_.find(fingerprint);
  const AlertRecord* last = nullptr;
  if (known != by_fingerprint_.end()) {
    auto it = store_->alerts().find(known->second);
    if (it != store_->alerts().end()) last = &it->second;
  }
  const bool open = last && last->status != AlertStatus::kResolved;
  const bool cooling =
      last && !open && last->fired_at > 0 && now - last->resolved_at < options_.cooldown_seconds;
  AlertRecord alert = (open || cooling) ? *last : std::move(fresh);
  if (open && last->status == AlertStatus::kFiring) {
    // The same incident again: count it, keep its first step.
    if (pending) return;
    ++alert.occurrences;
    alert.updated_at = now;
    Save(alert);
    return;
  }
  if (cooling) {
    ++alert.occurrences;
    alert.resolved_at = 0;
    alert.resolved_step = 0;
  }
  if (!open && !cooling) {
    alert.metric = e.metric;
    alert.step = e.step;
    alert.first_step = e.step;
    alert.time = e.time;
    alert.value = e.value;
    alert.started_at = now;
  }
  alert.severity = e.severity;
  alert.message = e.message;
  alert.labels = e.labels;
  alert.annotations = e.annotations;
  alert.updated_at = now;
  alert.status = pending ? AlertStatus::kPending : AlertStatus::kFiring;
  if (!pending) {
    alert.fired_at = now;
    alert.step = e.step;
    alert.time = e.time;
    alert.value = e.value;
    alert.metric = e.metric;
    alert.silenced_by = SilenceFor(alert);
    alerts_fired_.Add();
  }
  Save(alert);
  // A reopened flapping alert stays quiet; so does a silenced one.
  if (!pending && !cooling && alert.silenced_by == 0) Notify(alert);
}

void AlertManager::Resolve(const std::string& fingerprint, int64_t step,
                           const std::string& message) {
  auto known = by_fingerprint_.find(fingerprint);
  if (known == by_fingerprint_.end()) return;
  auto it = store_->alerts().find(known->second);
  if (it == store_->alerts().end() || it->second.status == AlertStatus::kResolved) return;
  AlertRecord alert = it->second;
  const double now = clock_.NowUnixSeconds();
  alert.status = AlertStatus::kResolved;
  alert.resolved_at = now;
  alert.resolved_step = step >= 0 ? step : alert.step;
  alert.updated_at = now;
  alert.annotations["resolution"] = message;
  Save(alert);
  if (alert.notified == "firing") Notify(alert);
}

void AlertManager::ResendFiring() {
  MutexLock lock(state_mu_);
  for (const auto& [id, a] : store_->alerts()) {
    if (a.status != AlertStatus::kFiring || a.notified != "firing" || a.silenced_by != 0) continue;
    AlertRecord copy = a;
    Notify(copy, /*repeat=*/true);
  }
}

void AlertManager::Save(AlertRecord& alert) {
  Status s = store_->Put(&alert);
  if (!s.ok()) {
    logger_.Error("alert store", {{"error", s.ToString()}, {"alert", alert.Fingerprint()}});
    return;
  }
  by_fingerprint_[alert.Fingerprint()] = alert.id;
  if (on_change_) on_change_(alert);
}

AlertManager::NotifyOutcome AlertManager::Notify(AlertRecord& alert, bool repeat) {
  if (!notify_) return NotifyOutcome::kNone;
  // Another node owns the run: its receivers hear from that node (or from this one on take-over).
  if (gate_.owns && !gate_.owns(alert.project, alert.run)) return NotifyOutcome::kNotOwner;
  notify::Notification n = ToNotification(alert);
  n.repeat = repeat;
  if (!repeat && gate_.delivered && Delivered(n.idempotency_key)) {
    // Told already by the node that owned the run before (or by this one before a restart).
    alert.notified = std::string(StatusName(alert.status));
    Status saved = store_->Put(&alert);
    if (!saved.ok()) logger_.Error("alert store", {{"error", saved.ToString()}});
    return NotifyOutcome::kKnown;
  }
  Status s = notify_(n);
  if (!s.ok()) {
    notify_errors_.Add();
    const bool first = !repeat && refused_.insert(alert.id).second;
    if (first || repeat) {
      logger_.Error("queueing alert notification; retrying at each stall check",
                    {{"error", s.ToString()}, {"alert", std::to_string(alert.id)}});
    }
    return NotifyOutcome::kFailed;
  }
  if (repeat) return NotifyOutcome::kQueued;
  refused_.erase(alert.id);
  alert.notified = std::string(StatusName(alert.status));
  Status saved = store_->Put(&alert);
  if (!saved.ok()) logger_.Error("alert store", {{"error", saved.ToString()}});
  return NotifyOutcome::kQueued;
}

bool AlertManager::Delivered(const std::string& key) const {
  Result<bool> delivered = gate_.delivered(key);
  if (delivered.ok()) return *delivered;
  logger_.Warn("cannot read the cluster's notified record; notifying (a duplicate at worst)",
               {{"key", key}, {"error", delivered.status().ToString()}});
  return false;
}

void AlertManager::TakeOver() {
  if (!gate_.owns) return;
  const double since = clock_.NowUnixSeconds() - options_.takeover_lookback_seconds;
  std::vector<uint64_t> ids;
  for (const auto& [id, a] : store_->alerts()) {
    if (a.status == AlertStatus::kPending || a.silenced_by != 0) continue;
    if (a.notified == StatusName(a.status)) continue;  // this node told receivers itself
    if (a.status == AlertStatus::kResolved && a.resolved_at < since) continue;
    if (!gate_.owns(a.project, a.run)) continue;
    ids.push_back(id);
  }
  for (uint64_t id : ids) {
    AlertRecord alert = store_->alerts().at(id);
    // A resolution is news only to receivers that were told the alert fired.
    if (alert.status == AlertStatus::kResolved && alert.notified != "firing" &&
        !(gate_.delivered && Delivered(alert.IdempotencyKey("firing")))) {
      continue;
    }
    const NotifyOutcome outcome = Notify(alert);
    if (outcome == NotifyOutcome::kQueued) takeover_notified_.Add();
    if (outcome == NotifyOutcome::kKnown) takeover_known_.Add();
    if (outcome == NotifyOutcome::kQueued || outcome == NotifyOutcome::kKnown) {
      logger_.Info(
          "alert taken over",
          {{"alert", std::to_string(id)},
           {"status", std::string(StatusName(alert.status))},
           {"outcome", outcome == NotifyOutcome::kQueued ? "notified" : "told by another node"}});
    }
  }
}

void AlertManager::RetryRefused() {
  while (!refused_.empty()) {
    const uint64_t id = *refused_.begin();
    auto it = store_->alerts().find(id);
    if (it == store_->alerts().end()) {
      refused_.erase(id);
      continue;
    }
    AlertRecord alert = it->second;
    // Nothing left to tell: told since, silenced, pending again, or resolved before receivers
    // heard it fire (a resolution is news only to receivers told it fired).
    const bool stale = alert.notified == StatusName(alert.status) || alert.silenced_by != 0 ||
                       alert.status == AlertStatus::kPending ||
                       (alert.status == AlertStatus::kResolved && alert.notified != "firing");
    if (stale) {
      refused_.erase(id);
      continue;
    }
    const NotifyOutcome outcome = Notify(alert);
    if (outcome == NotifyOutcome::kFailed) return;  // the disk still refuses: the next check
    refused_.erase(id);
    if (outcome == NotifyOutcome::kQueued) {
      logger_.Info(
          "alert notification queued after a refusal",
          {{"alert", std::to_string(id)}, {"status", std::string(StatusName(alert.status))}});
    }
  }
}

uint64_t AlertManager::SilenceFor(const AlertRecord& alert) const {
  const double now = clock_.NowUnixSeconds();
  for (const auto& [id, s] : store_->silences()) {
    if (s.Active(now) && s.Matches(alert)) return id;
  }
  return 0;
}

notify::Notification AlertManager::ToNotification(const AlertRecord& a) const {
  notify::Notification n;
  n.alert_id = std::to_string(a.id);
  n.status = a.status == AlertStatus::kResolved ? "resolved" : "firing";
  n.project = a.project;
  n.run = a.run;
  n.kind = a.kind;
  n.name = a.name;
  n.metric = a.metric;
  n.severity = a.severity;
  n.message = a.message;
  n.step = a.step;
  n.value = a.value;
  n.time = a.time;
  n.starts_at = a.fired_at > 0 ? a.fired_at : a.started_at;
  n.ends_at = a.status == AlertStatus::kResolved ? a.resolved_at : 0;
  n.labels = a.labels;
  if (a.rank >= 0) {
    n.labels["rank"] = std::to_string(a.rank);
    if (!a.host.empty()) n.labels["host"] = a.host;
  }
  n.annotations = a.annotations;
  n.idempotency_key = a.IdempotencyKey(n.status);
  n.chart_url = options_.external_url + "/#/runs/" + UrlEncode(a.project) + "/" + UrlEncode(a.run) +
                "?metric=" + UrlEncode(a.metric) + "&step=" + std::to_string(a.step);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Queries and operator actions.

std::vector<AlertRecord> AlertManager::List(const AlertQuery& q) const {
  MutexLock lock(state_mu_);
  std::vector<AlertRecord> out;
  const auto& alerts = store_->alerts();
  for (auto it = alerts.rbegin(); it != alerts.rend() && out.size() < q.limit; ++it) {
    const AlertRecord& a = it->second;
    if (a.id <= q.after_id) break;
    if (!q.project.empty() && a.project != q.project) continue;
    if (!q.run.empty() && a.run != q.run) continue;
    if (!q.kind.empty() && a.kind != q.kind) continue;
    if (!q.metric.empty() && a.metric != q.metric) continue;
    if (q.status && a.status != *q.status) continue;
    if (q.active_only && a.status == AlertStatus::kResolved) continue;
    out.push_back(a);
  }
  return out;
}

std::optional<AlertRecord> AlertManager::Get(uint64_t id) const {
  MutexLock lock(state_mu_);
  auto it = store_->alerts().find(id);
  if (it == store_->alerts().end()) return std::nullopt;
  return it->second;
}

Result<AlertRecord> AlertManager::Acknowledge(uint64_t id, bool acknowledged,
                                              const std::string& by) {
  AlertRecord alert;
  {
    MutexLock lock(state_mu_);
    auto it = store_->alerts().find(id);
    if (it == store_->alerts().end()) return Status::NotFound("no alert " + std::to_string(id));
    alert = it->second;
    const double now = clock_.NowUnixSeconds();
    TW_RETURN_IF_ERROR(SetAcknowledged(alert, acknowledged, by, now));
  }
  if (on_shared_op_) {
    SharedAlertOp op;
    op.kind = SharedAlertOp::Kind::kAck;
    op.incident_id = alert.IncidentId();
    op.acknowledged = acknowledged;
    op.by = alert.acknowledged_by;
    op.at = alert.acknowledged_at;
    on_shared_op_(op);
  }
  return alert;
}

Status AlertManager::SetAcknowledged(AlertRecord& alert, bool acknowledged, const std::string& by,
                                     double at) {
  alert.acknowledged = acknowledged;
  alert.acknowledged_by = acknowledged ? by : "";
  alert.acknowledged_at = acknowledged ? at : 0;
  alert.updated_at = clock_.NowUnixSeconds();
  TW_RETURN_IF_ERROR(store_->Put(&alert));
  if (on_change_) on_change_(alert);
  return Status::Ok();
}

Result<Silence> AlertManager::AddSilence(Silence silence) {
  const double now = clock_.NowUnixSeconds();
  if (silence.starts_at == 0) silence.starts_at = now;
  if (!(silence.ends_at > silence.starts_at) || silence.ends_at <= now) {
    return Status::InvalidArgument("a silence must end in the future, after it starts");
  }
  silence.id = 0;
  silence.uid = Silence::NewUid();
  {
    MutexLock lock(state_mu_);
    TW_RETURN_IF_ERROR(store_->Put(&silence));
  }
  ShareSilence(silence);
  return silence;
}

Result<Silence> AlertManager::ExpireSilence(uint64_t id) {
  Silence s;
  {
    MutexLock lock(state_mu_);
    auto it = store_->silences().find(id);
    if (it == store_->silences().end()) return Status::NotFound("no silence " + std::to_string(id));
    s = it->second;
    s.ends_at = std::min(s.ends_at, clock_.NowUnixSeconds());
    TW_RETURN_IF_ERROR(store_->Put(&s));
  }
  ShareSilence(s);
  return s;
}

void AlertManager::ShareSilence(const Silence& silence) {
  // A silence made before silences had uids stays this node's.
  if (!on_shared_op_ || silence.uid.empty()) return;
  SharedAlertOp op;
  op.kind = SharedAlertOp::Kind::kSilence;
  op.silence = silence;
  op.silence.id = 0;  // each node's own
  on_shared_op_(op);
}

Status AlertManager::ApplyShared(const SharedAlertOp& op) {
  MutexLock lock(state_mu_);
  if (op.kind == SharedAlertOp::Kind::kSilence) {
    if (op.silence.uid.empty()) return Status::InvalidArgument("a shared silence needs a uid");
    Silence silence = op.silence;
    silence.id = 0;
    for (const auto& [id, known] : store_->silences()) {
      if (known.uid != silence.uid) continue;
      silence.id = id;
      const bool same = known.ToJson() == silence.ToJson();
      if (same) return Status::Ok();
      break;
    }
    return store_->Put(&silence);
  }
  std::vector<AlertRecord> incident;
  for (const auto& [id, alert] : store_->alerts()) {
    if (alert.IncidentId() == op.incident_id) incident.push_back(alert);
  }
  if (incident.empty()) return Status::NotFound("no alert of incident " + op.incident_id);
  for (AlertRecord& alert : incident) {
    if (alert.acknowledged == op.acknowledged && alert.acknowledged_at == op.at) continue;
    TW_RETURN_IF_ERROR(SetAcknowledged(alert, op.acknowledged, op.by, op.at));
  }
  return Status::Ok();
}

std::string SharedAlertOp::Key() const {
  return kind == Kind::kSilence ? "silence." + silence.uid : "ack." + incident_id;
}

std::string SharedAlertOp::ToJson() const {
  if (kind == Kind::kSilence) return nlohmann::json{{"silence", silence.ToJson()}}.dump();
  return nlohmann::json{
      {"ack", {{"incident", incident_id}, {"acknowledged", acknowledged}, {"by", by}, {"at", at}}}}
      .dump();
}

Result<SharedAlertOp> SharedAlertOp::FromJson(std::string_view text) {
  TW_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(text));
  SharedAlertOp op;
  try {
    if (j.is_object() && j.contains("silence")) {
      TW_ASSIGN_OR_RETURN(op.silence, Silence::FromJson(j.at("silence")));
      op.kind = Kind::kSilence;
      return op;
    }
    if (j.is_object() && j.contains("ack") && j.at("ack").is_object()) {
      const nlohmann::json& a = j.at("ack");
      op.kind = Kind::kAck;
      op.incident_id = a.value("incident", "");
      op.acknowledged = a.value("acknowledged", false);
      op.by = a.value("by", "");
      op.at = a.value("at", 0.0);
      if (!op.incident_id.empty()) return op;
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("shared alert operation: ") + e.what());
  }
  return Status::InvalidArgument("shared alert operation: neither a silence nor an ack");
}

std::vector<Silence> AlertManager::Silences(bool include_expired) const {
  MutexLock lock(state_mu_);
  const double now = clock_.NowUnixSeconds();
  std::vector<Silence> out;
  for (const auto& [id, s] : store_->silences()) {
    if (include_expired || now < s.ends_at) out.push_back(s);
  }
  return out;
}

}  // namespace trainwatch::alerting
