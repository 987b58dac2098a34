// AlertManager, detection side: the commit listener, the detection thread that runs every run's
// RunMonitor, the stall check, and rule reloads (alert_manager.h).
#include "alerting/alert_manager.h"

#include <cmath>

namespace trainwatch::alerting {
namespace {

std::string MonitorKey(const std::string& project, const std::string& run) {
  return project + '\x1f' + run;
}

bool Ends(const std::string& status) { return status == "finished" || status == "crashed"; }

}  // namespace

std::shared_ptr<const rules::RuleSet> AlertManager::rules() const {
  MutexLock lock(monitors_mu_);
  return rules_;
}

void AlertManager::Reload(std::shared_ptr<const rules::RuleSet> rules) {
  {
    MutexLock lock(monitors_mu_);
    rules_ = rules;
    for (auto& [key, m] : monitors_) m.monitor->Rebind(rules);
  }
}

// ---------------------------------------------------------------------------------------------
// Detection, on the applier thread.

void AlertManager::FeedBatch(const v1::RunBatch& batch, double arrival, RunMonitor& monitor,
                             std::vector<AlertEvent>* out) {
  monitor.ObserveBatch(batch, out, arrival);
  records_seen_.Add(static_cast<uint64_t>(batch.steps_size()));
}

void AlertManager::OnCommit(const v1::WriteRequest& request) {
  QueuedWrite write;
  write.arrival = clock_.NowUnixSeconds();
  for (const v1::RunBatch& batch : request.runs()) {
    if (batch.sampled()) continue;  // machine samples are not training steps
    const bool status = batch.has_metadata() && batch.metadata().has_status();
    // A rank's heartbeat says it is alive (rank_dead, collective_hang).
    const bool rank_heartbeat = batch.has_rank() && batch.has_heartbeat();
    if (batch.steps_size() == 0 && !status && !rank_heartbeat) continue;
    v1::RunBatch* copy = write.request.add_runs();
    copy->set_project(batch.project());
    copy->set_run(batch.run());
    if (batch.has_rank()) *copy->mutable_rank() = batch.rank();
    if (rank_heartbeat) *copy->mutable_heartbeat() = batch.heartbeat();
    *copy->mutable_steps() = batch.steps();
    *copy->mutable_times() = batch.times();
    *copy->mutable_metrics() = batch.metrics();
    if (status) copy->mutable_metadata()->set_status(batch.metadata().status());
  }
  if (write.request.runs_size() == 0) return;
  write.bytes = write.request.ByteSizeLong();
  {
    MutexLock lock(detect_mu_);
    // Backpressure: detection never skips a point, so a detector that falls behind slows commits.
    detect_space_.wait(lock.native(), [&]() TW_REQUIRES(detect_mu_) {
      return detect_stop_ || detect_bytes_ == 0 ||
             detect_bytes_ + write.bytes <= options_.max_queued_bytes;
    });
    detect_bytes_ += write.bytes;
    ++writes_queued_;
    detect_queue_.push_back(std::move(write));
  }
  detect_cv_.notify_one();
}

void AlertManager::DetectLoop() {
  MutexLock lock(detect_mu_);
  for (;;) {
    detect_cv_.wait(lock.native(), [&]() TW_REQUIRES(detect_mu_) {
      return detect_stop_ || !detect_queue_.empty();
    });
    if (detect_queue_.empty()) return;  // stopping, and everything is detected
    QueuedWrite write = std::move(detect_queue_.front());
    detect_queue_.pop_front();
    lock.Unlock();
    Detect(write);
    lock.Lock();
    detect_bytes_ -= write.bytes;
    ++writes_detected_;
    detect_space_.notify_all();
  }
}

void AlertManager::Detect(const QueuedWrite& write) {
  const v1::WriteRequest& request = write.request;
  std::vector<QueuedEvent> queued;
  std::vector<AlertEvent> events;
  {
    MutexLock lock(monitors_mu_);
    for (const v1::RunBatch& batch : request.runs()) {
      const std::string key = MonitorKey(batch.project(), batch.run());
      bool ending =
          batch.has_metadata() && batch.metadata().has_status() && Ends(batch.metadata().status());
      auto it = monitors_.find(key);
      if (it == monitors_.end() && batch.steps_size() > 0) {
        it = monitors_
                 .emplace(key, Monitored{std::make_unique<RunMonitor>(batch.project(), batch.run(),
                                                                      rules_)})
                 .first;
      }
      if (it != monitors_.end() && (batch.steps_size() > 0 || batch.has_rank())) {
        events.clear();
        FeedBatch(batch, write.arrival, *it->second.monitor, &events);
        // `stalled` watches the run-level view: its clock is that of the rows without a rank or of
        // rank 0.
        const bool run_level = !batch.has_rank() || batch.rank().rank() == 0;
        double last_time = batch.times_size() ? batch.times(batch.times_size() - 1) : NAN;
        if (run_level && std::isfinite(last_time))
          it->second.clock_offset = write.arrival - last_time;
        for (AlertEvent& e : events)
          queued.push_back(QueuedEvent{batch.project(), batch.run(), std::move(e)});
      }
      // One rank of a distributed run finishing ends the run only once every rank has.
      if (ending && batch.has_rank() && it != monitors_.end()) {
        ending = it->second.monitor->RankFinished(batch.rank().rank());
      }
      if (ending) {
        if (it != monitors_.end()) monitors_.erase(it);
        // The run is over: whatever was open about it is closed with it.
        AlertEvent end;
        end.type = AlertEvent::Type::kResolved;
        end.message = "run " + batch.metadata().status();
        end.step = -1;
        queued.push_back(QueuedEvent{batch.project(), batch.run(), std::move(end)});
      }
    }
  }
  if (!queued.empty()) Enqueue(std::move(queued));
}

void AlertManager::CheckStalled() {
  std::vector<QueuedEvent> queued;
  std::vector<AlertEvent> events;
  const double now = clock_.NowUnixSeconds();
  {
    MutexLock lock(monitors_mu_);
    for (auto& [key, m] : monitors_) {
      events.clear();
      m.monitor->CheckStalled(now - m.clock_offset, &events);
      m.monitor->CheckRanks(now, &events);
      for (AlertEvent& e : events)
        queued.push_back(QueuedEvent{m.monitor->project(), m.monitor->run(), std::move(e)});
    }
  }
  if (!queued.empty()) Enqueue(std::move(queued));
}

}  // namespace trainwatch::alerting
