#include "notify/outbox.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <thread>

namespace trainwatch::notify {

struct NotificationOutbox::Delivery {
  uint64_t id = 0;
  double enqueued_at = 0;
  Notification notification;
};

// One receiver's queue and delivery thread. Every field but `thread` and `name` is GUARDED_BY
// the outbox's mu_.
struct NotificationOutbox::Worker {
  std::string name;
  // Replaced by Reload; the thread sends through its own copy, so a swap never waits for a send.
  std::shared_ptr<Notifier> notifier;
  std::deque<Delivery> queue;
  std::optional<uint64_t> in_flight;  // the id being sent, outside the lock
  int64_t next_attempt = 0;           // no attempt before this (backoff), clock_.MonotonicNanos()
  bool stop = false;
  std::condition_variable cv;
  std::thread thread;
};

RoutingTable BuildRoutingTable(const NotifyConfig& config, const Clock& clock) {
  RoutingTable table;
  table.routes = config.routes;
  for (const ReceiverConfig& r : config.receivers)
    table.receivers[r.name] = BuildNotifier(r, clock);
  return table;
}

NotificationOutbox::NotificationOutbox(std::string dir, const Clock& clock, OutboxOptions options,
                                       Logger& logger, MetricsRegistry& metrics)
    : dir_(std::move(dir)),
      options_(options),
      clock_(clock),
      logger_(logger),
      sent_(metrics.AddCounter("trainwatch_notifications_sent_total",
                               "Notifications a receiver accepted.")),
      failed_(metrics.AddCounter("trainwatch_notifications_failed_total",
                                 "Failed notification attempts, retried or not.")),
      dropped_(metrics.AddCounter("trainwatch_notifications_dropped_total",
                                  "Notifications given up on: permanent failure, too old, queue "
                                  "full, or receiver removed.")),
      queued_(std::make_shared<std::atomic<uint64_t>>(0)) {
  metrics.AddGauge("trainwatch_notifications_queued",
                   "Notification deliveries waiting in the outbox.",
                   [queued = queued_] { return static_cast<double>(queued->load()); });
}

NotificationOutbox::~NotificationOutbox() { Stop(); }

Result<std::unique_ptr<NotificationOutbox>> NotificationOutbox::Open(
    std::string dir, NotifyConfig config, FileSystem& fs, const Clock& clock, OutboxOptions options,
    Logger& logger, MetricsRegistry& metrics) {
  return Open(std::move(dir), BuildRoutingTable(config, clock), fs, clock, options, logger,
              metrics);
}

Status NotificationOutbox::CheckTable(const RoutingTable& table) {
  for (const Route& r : table.routes) {
    auto it = table.receivers.find(r.receiver);
    if (it == table.receivers.end() || it->second == nullptr) {
      return Status::InvalidArgument("route to unknown receiver '" + r.receiver + "'");
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<NotificationOutbox>> NotificationOutbox::Open(
    std::string dir, RoutingTable table, FileSystem& fs, const Clock& clock, OutboxOptions options,
    Logger& logger, MetricsRegistry& metrics) {
  TW_RETURN_IF_ERROR(CheckTable(table).WithContext("opening outbox " + dir));
  std::unique_ptr<NotificationOutbox> outbox(
      new NotificationOutbox(std::move(dir), clock, options, logger, metrics));
  NotificationOutbox& o = *outbox;

  // Nobody else sees the outbox yet; the lock is for the analysis (and costs nothing here).
  MutexLock lock(o.mu_);
  o.routes_ = std::move(table.routes);
  for (auto& [name, notifier] : table.receivers) {
    o.workers_[name] = o.NewWorker(name, std::move(notifier));
  }
  // What an earlier run left undelivered goes back to its receiver's queue; a delivery for a
  // receiver no longer configured, or one that does not decode, is dropped.
  uint64_t dropped = 0;
  std::vector<std::pair<OutboxRecord, Notification>> queued;
  auto keep = [&](const OutboxRecord& record) TW_REQUIRES(o.mu_) {
    Result<Notification> n = NotificationFromJson(record.notification_json);
    if (!o.workers_.count(record.receiver) || !n.ok()) {
      ++dropped;
      o.logger_.Warn(
          "outbox: dropping delivery",
          {{"receiver", record.receiver},
           {"id", record.id},
           {"reason", !n.ok() ? n.status().message() : "receiver no longer configured"}});
      o.dropped_.Add();
      return false;
    }
    queued.emplace_back(record, std::move(n).value());
    return true;
  };
  std::vector<OutboxRecord> kept;
  TW_ASSIGN_OR_RETURN(o.log_, OutboxLog::Open(o.dir_, fs, OutboxLogOptions{options.segment_bytes},
                                              logger, keep, &kept));
  for (auto& [record, n] : queued) {
    o.workers_.at(record.receiver)
        ->queue.push_back(Delivery{record.id, record.enqueued_at, std::move(n)});
  }
  o.UpdateQueuedLocked();
  if (!queued.empty() || dropped > 0) {
    o.logger_.Info("outbox replayed",
                   {{"dir", o.dir_}, {"queued", queued.size()}, {"dropped", dropped}});
  }
  for (auto& [name, w] : o.workers_) o.StartWorker(*w);
  return outbox;
}

std::unique_ptr<NotificationOutbox::Worker> NotificationOutbox::NewWorker(
    const std::string& name, std::unique_ptr<Notifier> notifier) {
  auto w = std::make_unique<Worker>();
  w->name = name;
  w->notifier = std::move(notifier);
  return w;
}

void NotificationOutbox::StartWorker(Worker& w) {
  w.thread = std::thread([this, worker = &w] { RunWorker(worker); });
}

Status NotificationOutbox::Enqueue(const Notification& n) {
  MutexLock lock(mu_);
  if (stopped_) return Status::Unavailable("outbox stopped");
  std::vector<std::string> receivers = MatchingReceivers(routes_, n);
  if (n.repeat) {
    std::erase_if(receivers, [&](const std::string& r) TW_REQUIRES(mu_) {
      return !workers_.at(r)->notifier->WantsRepeats();
    });
  }
  if (receivers.empty()) return Status::Ok();
  const std::string json = NotificationToJson(n);
  const double now = clock_.NowUnixSeconds();
  Result<std::vector<uint64_t>> ids = log_->AppendDeliveries(now, receivers, json);
  if (!ids.ok()) {
    enqueue_error_ =
        ids.status().WithContext("outbox: enqueueing alert " + n.alert_id + " " + n.status);
    return enqueue_error_;
  }
  enqueue_error_ = Status::Ok();
  for (size_t i = 0; i < receivers.size(); ++i) {
    Worker& w = *workers_.at(receivers[i]);
    w.queue.push_back(Delivery{(*ids)[i], now, n});
    if (w.queue.size() > options_.max_queued_per_receiver) {
      auto victim = w.queue.begin();
      if (w.in_flight == victim->id) ++victim;
      if (victim != w.queue.end()) {
        uint64_t id = victim->id;
        logger_.Warn("outbox: queue full, dropping the oldest waiting notification",
                     {{"receiver", w.name},
                      {"alert_id", victim->notification.alert_id},
                      {"limit", options_.max_queued_per_receiver}});
        w.queue.erase(victim);
        dropped_.Add();
        FinishLocked(w, id, AckOutcome::kDropped);
      }
    }
    w.cv.notify_one();
  }
  UpdateQueuedLocked();
  return Status::Ok();
}

void NotificationOutbox::SetDeliveredListener(DeliveredFn on_delivered) {
  MutexLock lock(mu_);
  on_delivered_ = std::move(on_delivered);
}

void NotificationOutbox::RunWorker(Worker* w) {
  std::mt19937_64 rng(options_.jitter_seed != 0
                          ? options_.jitter_seed ^ std::hash<std::string>()(w->name)
                          : std::random_device()());
  int failures = 0;  // consecutive retryable failures of the head delivery
  MutexLock lock(mu_);
  while (!w->stop) {
    if (w->queue.empty()) {
      clock_.WaitUntil(lock.native(), w->cv, Clock::kNever,
                       [w] { return w->stop || !w->queue.empty(); });
      continue;
    }
    if (clock_.MonotonicNanos() < w->next_attempt) {
      // Reload resets next_attempt: a fixed receiver is tried at once.
      clock_.WaitUntil(lock.native(), w->cv, w->next_attempt, [w, deadline = w->next_attempt] {
        return w->stop || w->next_attempt != deadline;
      });
      continue;
    }
    Delivery d = w->queue.front();
    std::shared_ptr<Notifier> notifier = w->notifier;
    const DeliveredFn on_delivered = on_delivered_;
    w->in_flight = d.id;
    lock.Unlock();

    const double age = clock_.NowUnixSeconds() - d.enqueued_at;
    const bool expired = age > options_.max_age_seconds;
    Status s = expired ? Status::Ok() : notifier->Send(d.notification);
    const Notification& n = d.notification;
    if (expired) {
      logger_.Warn("notification dropped: too old", {{"receiver", w->name},
                                                     {"alert_id", n.alert_id},
                                                     {"status", n.status},
                                                     {"age_seconds", age}});
    } else if (s.ok()) {
      logger_.Debug("notification sent",
                    {{"receiver", w->name}, {"alert_id", n.alert_id}, {"status", n.status}});
      if (on_delivered && !n.repeat) on_delivered(n, w->name);
    } else if (IsRetryable(s)) {
      logger_.Warn("notification failed, will retry", {{"receiver", w->name},
                                                       {"alert_id", n.alert_id},
                                                       {"status", n.status},
                                                       {"attempt", failures + 1},
                                                       {"error", s.message()}});
    } else {
      logger_.Error("notification failed permanently, dropped", {{"receiver", w->name},
                                                                 {"alert_id", n.alert_id},
                                                                 {"status", n.status},
                                                                 {"error", s.ToString()}});
    }

    lock.Lock();
    w->in_flight.reset();
    if (expired) {
      dropped_.Add();
      FinishLocked(*w, d.id, AckOutcome::kDropped);
      failures = 0;
    } else if (s.ok()) {
      sent_.Add();
      FinishLocked(*w, d.id, AckOutcome::kDelivered);
      failures = 0;
    } else if (IsRetryable(s) && w->notifier != notifier) {
      failed_.Add();  // Reload swapped the notifier during the send: try the new one at once
      failures = 0;
    } else if (IsRetryable(s)) {
      failed_.Add();
      ++failures;
      double wait = options_.initial_backoff_seconds *
                    std::pow(options_.backoff_multiplier, std::min(failures - 1, 64));
      wait = std::min(wait, options_.max_backoff_seconds);
      wait *= 1 - options_.jitter * std::uniform_real_distribution<double>(0, 1)(rng);
      w->next_attempt = clock_.DeadlineIn(wait);
    } else {
      failed_.Add();
      dropped_.Add();
      FinishLocked(*w, d.id, AckOutcome::kDropped);
      failures = 0;
    }
  }
}

void NotificationOutbox::FinishLocked(Worker& w, uint64_t id, AckOutcome outcome) {
  if (!w.queue.empty() && w.queue.front().id == id) w.queue.pop_front();
  if (!log_->Ack(id, outcome)) return;  // already dropped (receiver removed meanwhile)
  UpdateQueuedLocked();
  idle_cv_.notify_all();
}

void NotificationOutbox::DropQueuedLocked(Worker& w, const std::string& reason) {
  std::vector<uint64_t> ids;
  for (const Delivery& d : w.queue) ids.push_back(d.id);
  if (!ids.empty()) {
    logger_.Warn("outbox: dropping queued notifications",
                 {{"receiver", w.name}, {"count", ids.size()}, {"reason", reason}});
  }
  for (uint64_t id : ids) {
    dropped_.Add();
    FinishLocked(w, id, AckOutcome::kDropped);
  }
  w.queue.clear();
}

void NotificationOutbox::UpdateQueuedLocked() { queued_->store(log_->pending()); }

Status NotificationOutbox::Reload(NotifyConfig config) {
  return Reload(BuildRoutingTable(config, clock_));
}

Status NotificationOutbox::Reload(RoutingTable table) {
  TW_RETURN_IF_ERROR(CheckTable(table).WithContext("reloading outbox"));
  std::vector<std::unique_ptr<Worker>> retired;
  {
    MutexLock lock(mu_);
    if (stopped_) return Status::Unavailable("outbox stopped");
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (table.receivers.count(it->first)) {
        ++it;
        continue;
      }
      Worker& w = *it->second;
      DropQueuedLocked(w, "receiver removed from the configuration");
      w.stop = true;
      w.cv.notify_all();
      retired.push_back(std::move(it->second));
      it = workers_.erase(it);
    }
    for (auto& [name, notifier] : table.receivers) {
      auto it = workers_.find(name);
      if (it != workers_.end()) {
        it->second->notifier = std::move(notifier);
        it->second->next_attempt = 0;  // a fixed receiver is tried at once, not after the backoff
        it->second->cv.notify_all();
        continue;
      }
      std::unique_ptr<Worker>& w = workers_[name];
      w = NewWorker(name, std::move(notifier));
      StartWorker(*w);
    }
    routes_ = std::move(table.routes);
    logger_.Info("outbox reloaded", {{"receivers", workers_.size()}, {"routes", routes_.size()}});
  }
  for (auto& w : retired) w->thread.join();  // each finishes its send in progress, if any
  return Status::Ok();
}

void NotificationOutbox::Stop() {
  std::vector<std::thread*> threads;
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& [name, w] : workers_) {
      w->stop = true;
      w->cv.notify_all();
      threads.push_back(&w->thread);
    }
  }
  // workers_ no longer changes: Reload refuses once stopped_.
  for (std::thread* t : threads) {
    if (t->joinable()) t->join();
  }
  MutexLock lock(mu_);
  if (log_ == nullptr) return;  // Open failed
  Status s = log_->Close();     // keeps the acks: fewer repeats after a clean restart
  if (!s.ok()) logger_.Warn("outbox: closing the log failed", {{"error", s.ToString()}});
}

Status NotificationOutbox::Health() const {
  MutexLock lock(mu_);
  return enqueue_error_;
}

uint64_t NotificationOutbox::Queued() const { return queued_->load(); }

void NotificationOutbox::WaitIdle() {
  MutexLock lock(mu_);
  idle_cv_.wait(lock.native(), [this]() TW_REQUIRES(mu_) { return log_->pending() == 0; });
}

}  // namespace trainwatch::notify
