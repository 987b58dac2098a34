// ClientCore: the batcher thread — buffer to batches, heartbeats, the stuck-server watchdog.
#include <algorithm>
#include <chrono>

#include "client_core.h"

namespace trainwatch::sdk {

void ClientCore::BatcherLoop() {
  const double poll = std::clamp(options_.batch_max_delay_seconds / 4, 0.002, 0.05);
  double next_heartbeat = MonotonicNow();
  for (;;) {
    std::vector<std::pair<v1::RunBatch, bool>> control;
    uint64_t flush_target;
    bool flushing;
    bool stopping;
    {
      MutexLock lock(control_mu_);
      control_cv_.wait_for(
          lock.native(), std::chrono::duration<double>(poll), [&]() TW_REQUIRES(control_mu_) {
            return batcher_stop_ || flush_requested_ > flush_done_ || !control_.empty();
          });
      control.swap(control_);
      flush_target = flush_requested_;
      flushing = flush_requested_ > flush_done_;
      stopping = batcher_stop_;
    }
    // Points logged before a finish (or a flush) must go out with it or before it: drain what the
    // buffer holds now (not what keeps arriving, or a busy producer would keep us here forever).
    bool drain_all =
        stopping || flushing ||
        std::any_of(control.begin(), control.end(), [](const auto& c) { return c.second; });
    Record record;
    size_t budget = drain_all ? queue_.SizeApprox() : queue_.capacity();
    while (budget-- > 0 && queue_.TryPop(&record)) {
      if (builder_.empty()) pending_since_ = MonotonicNow();
      builder_.Add(record);
      if (builder_.points() >= options_.batch_max_points) Cut();
    }
    // After the points drained above, so that a finish goes out with (or after) the last of them.
    bool has_control = !control.empty();
    for (auto& [batch, after_rows] : control) {
      if (builder_.empty()) pending_since_ = MonotonicNow();
      builder_.AddRunBatch(std::move(batch), after_rows);
      if (builder_.run_batch_bytes() >= options_.batch_max_bytes) Cut();
    }
    const double now = MonotonicNow();
    if (!builder_.empty() && (flushing || stopping || has_control ||
                              now - pending_since_ >= options_.batch_max_delay_seconds)) {
      Cut();
    }
    if (flushing) {
      MutexLock lock(control_mu_);
      flush_done_ = flush_target;
      control_cv_.notify_all();
    }
    if (stopping) return;
    if (options_.heartbeat_interval_seconds > 0 && now >= next_heartbeat) {
      next_heartbeat = now + options_.heartbeat_interval_seconds;
      QueueHeartbeat();
    }
    CheckStuck();
  }
}

void ClientCore::Cut() {
  v1::WriteRequest request;
  request.set_writer_id(writer_id_);
  request.set_sequence(next_sequence_++);
  const uint32_t points = static_cast<uint32_t>(builder_.points());
  builder_.TakeInto(&request);
  pending_since_ = 0;
  OutboxBatch batch{request.sequence(), points,
                    std::make_shared<const std::string>(request.SerializeAsString())};
  const bool to_spool = options_.mode == Mode::kOffline || !connected_.load();
  for (;;) {
    bool spooled = false;
    uint64_t dropped = 0;
    Status s = outbox_->Push(batch, to_spool, &spooled, &dropped);
    if (dropped > 0) {
      points_dropped_.fetch_add(dropped);
      Warn(WarningKind::kPointsDropped,
           "the spool is full (" + std::to_string(options_.spool_max_bytes) +
               " bytes): dropped its oldest " + std::to_string(dropped) + " points");
    }
    if (s.ok()) {
      if (spooled) {
        points_spooled_.fetch_add(points);
        if (auto hook = spooled_hook_for_testing.load()) hook();
      }
      break;
    }
    if (options_.overflow == OverflowPolicy::kBlock && s.code() == StatusCode::kResourceExhausted &&
        !closed()) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(50));  // wait for the sender to make room
      continue;
    }
    points_dropped_.fetch_add(points);
    Warn(WarningKind::kPointsDropped,
         "dropped a batch of " + std::to_string(points) + " points: " + s.ToString());
    break;
  }
  MutexLock lock(sender_mu_);
  sender_cv_.notify_all();
}

void ClientCore::QueueHeartbeat() {
  v1::WriteRequest request;
  {
    MutexLock lock(control_mu_);
    for (const auto& run : runs_) {
      if (run->finished.load() || !run->handle_alive.load()) continue;
      v1::RunBatch* batch = request.add_runs();
      run->Address(batch);
      batch->mutable_heartbeat()->set_interval_seconds(options_.heartbeat_interval_seconds);
    }
  }
  if (request.runs_size() == 0) return;
  MutexLock lock(sender_mu_);
  heartbeat_ = request.SerializeAsString();  // a newer heartbeat replaces one not yet sent
  sender_cv_.notify_all();
}

void ClientCore::CheckStuck() {
  MutexLock lock(sender_mu_);
  if (!connection_ || in_flight_.empty()) return;
  if (MonotonicNow() - in_flight_.front().sent_at < options_.ack_timeout_seconds) return;
  last_error_ = "no acknowledgement for " + std::to_string(options_.ack_timeout_seconds) + " s";
  broken_ = true;
  connection_->Cancel();
  sender_cv_.notify_all();
}

}  // namespace trainwatch::sdk
